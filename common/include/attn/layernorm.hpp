// attn/layernorm.hpp moved to attn/ops/layernorm.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/ops/layernorm.hpp"
