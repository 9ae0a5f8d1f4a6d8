// attn/gradcheck.hpp moved to attn/train/gradcheck.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/train/gradcheck.hpp"
