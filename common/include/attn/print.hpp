// attn/print.hpp moved to attn/io/print.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/io/print.hpp"
