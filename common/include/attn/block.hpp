// attn/block.hpp moved to attn/model/block.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/model/block.hpp"
