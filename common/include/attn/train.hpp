// attn/train.hpp moved to attn/train/train.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/train/train.hpp"
