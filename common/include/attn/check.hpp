// attn/check.hpp moved to attn/core/check.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/core/check.hpp"
