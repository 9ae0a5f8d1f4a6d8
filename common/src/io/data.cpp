// data.cpp: the train/validation split and get_batch, the data side of training (chapters 01
// and 09; see attn/io/data.hpp).
#include "attn/io/data.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "attn/core/check.hpp"
#include "attn/core/limits.hpp"

namespace attn {

Split train_val_split(std::span<const int> tokens, double train_fraction) {
  require(train_fraction > 0.0 && train_fraction < 1.0, "attn::train_val_split", [&] {
    return "train_fraction must be strictly between 0 and 1, got " + std::to_string(train_fraction);
  });
  // n = int(0.9 * len(data)) in the lecture: the product in double, truncated toward zero, so
  // the split point is the same number on every machine and in Python.
  const auto n_train =
      static_cast<std::size_t>(train_fraction * static_cast<double>(tokens.size()));
  Split split;
  split.train.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n_train));
  split.val.assign(tokens.begin() + static_cast<std::ptrdiff_t>(n_train), tokens.end());
  return split;
}

Batch get_batch(std::span<const int> data, std::size_t batch_size, std::size_t block_size,
                Rng& rng) {
  Batch batch;
  get_batch(data, batch_size, block_size, rng, batch);
  return batch;
}

void get_batch(std::span<const int> data, std::size_t batch_size, std::size_t block_size, Rng& rng,
               Batch& out) {
  const std::size_t B = batch_size;
  const std::size_t T = block_size;
  const std::size_t n = data.size();
  if (B == 0) shape_error("attn::get_batch", "batch_size >= 1", "0");
  if (T == 0) shape_error("attn::get_batch", "block_size >= 1", "0");
  // A window needs T inputs plus the one target after the last of them.
  if (n <= T) {  // not n < T + 1, which wraps around for T = SIZE_MAX
    shape_error("attn::get_batch", "at least block_size + 1 = " + std::to_string(T + 1) + " tokens",
                std::to_string(n));
  }
  checked_elements({B, T}, "attn::get_batch: (B, T)");  // B * T must not wrap around
  const std::array<std::size_t, 2> shape = {B, T};
  if (out.x.shape() != shape) out.x.resize(shape);
  if (out.y.shape() != shape) out.y.resize(shape);
  int* x = out.x.data();
  int* y = out.y.data();
  for (std::size_t b = 0; b < B; ++b) {
    // 1. A start i in [0, n - T - 1], like torch.randint(len(data) - block_size): the target
    //    window i+1 .. i+T still ends inside the data.
    const std::size_t i = rng.below(n - T);
    // 2. Row b of x is data[i : i+T]; row b of y is the same window shifted by one, so y[b, t]
    //    is the token that follows x[b, 0..t].
    std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(i), T, x + b * T);      // (T,)
    std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(i + 1), T, y + b * T);  // (T,)
  }
}

}  // namespace attn
