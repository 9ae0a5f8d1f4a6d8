// attn/limits.hpp moved to attn/core/limits.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/core/limits.hpp"
