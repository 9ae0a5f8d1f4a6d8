// attn/npy.hpp moved to attn/io/npy.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/io/npy.hpp"
