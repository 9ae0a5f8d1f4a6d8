// attn/narrate.hpp moved to attn/io/narrate.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/io/narrate.hpp"
