// attn/ffn.hpp moved to attn/ops/ffn.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/ops/ffn.hpp"
