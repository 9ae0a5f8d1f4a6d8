// flash_mha.hpp (private to common/src): the flash kernel (fast/flash.cpp) on multi-head
// attention's (B, T, 3C) projection [q | k | v], heads read and written in place (H heads of
// hs = C / H columns). What attn::fast::mha_flash_forward / mha_flash_backward run, and the
// training path of fast/attention.cpp (mha_forward with a cache, mha_backward) from kFlashMinT
// positions on.
#pragma once

#include <cstddef>

#include "attn/fast/flash.hpp"

namespace attn::fast {

// qkv (B, T, 3C) -> heads (B, T, C), the merged head outputs, and lse (B, H, T), each query's
// log-sum-exp. No (T, T) buffer. Sizes checked (messages name fn).
void flash_mha_attend(const char* fn, std::size_t B, std::size_t T, std::size_t C, std::size_t H,
                      bool causal, const float* qkv, float* heads, float* lse,
                      std::size_t tile = kFlashTile);
// Its backward: dheads (B, T, C) -> dqkv (B, T, 3C) dq | dk | dv, every element written, P
// recomputed tile by tile from lse.
void flash_mha_attend_backward(const char* fn, std::size_t B, std::size_t T, std::size_t C,
                               std::size_t H, bool causal, const float* qkv, const float* heads,
                               const float* dheads, const float* lse, float* dqkv,
                               std::size_t tile = kFlashTile);

}  // namespace attn::fast
