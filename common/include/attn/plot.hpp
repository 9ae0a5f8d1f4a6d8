// attn/plot.hpp moved to attn/io/plot.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/io/plot.hpp"
