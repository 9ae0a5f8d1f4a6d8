// attn/optim.hpp moved to attn/train/optim.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/train/optim.hpp"
