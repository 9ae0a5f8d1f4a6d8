// attn/bigram.hpp moved to attn/model/bigram.hpp (common/README.md has the map). This
// forwarding header keeps code written against the old layout compiling for one release.
#pragma once
#include "attn/model/bigram.hpp"
