// attn/text.hpp moved to attn/io/text.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/io/text.hpp"
