// attn/model.hpp moved to attn/model/model.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/model/model.hpp"
