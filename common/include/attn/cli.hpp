// attn/cli.hpp moved to attn/io/cli.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/io/cli.hpp"
