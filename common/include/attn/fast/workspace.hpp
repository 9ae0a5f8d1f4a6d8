// attn/fast/workspace.hpp: the working memory of the fast kernels, owned by their caller.
//
// A fast kernel that needs memory beyond its inputs, its outputs and its cache (a block of
// scores per thread, the backward's intermediate gradients, per-chunk sums, RoPE's angle table)
// takes it from a Workspace the caller passes in. The buffers grow to the largest call seen and
// are kept, so a loop that passes the same workspace every step allocates nothing after its
// first: the training step passes the one in its LmCache (model.hpp), a block called on its own
// the one in its BlockWork (block.hpp), generation the one in its cache (kvcache.hpp). A kernel
// that splits its work over threads takes one slice per part of a buffer, sized by the calling
// thread before the split. The overloads without a Workspace (the ones that return new tensors)
// make a local one per call.
//
// Each buffer has one user at a time; a kernel that calls another (attention calls RoPE) uses a
// different buffer than its callee:
//   buffer      a kernel's own (B*T, ...) intermediates: attention's dq | dk | dv, the FFN's and
//               SwiGLU's hidden gradients, the evaluation forward's q | k | v
//   per_thread  one slice per thread inside a parallel region: attention's blocks of scores
//   sums        sums in double per chunk of rows (cross-entropy, LayerNorm's and RMSNorm's
//               dgamma, the global gradient norm), added in chunk order afterwards
//   angles      RoPE's frequencies and (cos, sin) table
#pragma once

#include <cstddef>
#include <vector>

namespace attn::fast {

struct Workspace {
  std::vector<float> buffer;
  std::vector<float> per_thread;
  std::vector<double> sums;
  std::vector<double> angles;
};

// v's data, v grown to at least n elements first (never shrunk: the next call of the same size
// allocates nothing).
template <class T>
T* at_least(std::vector<T>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace attn::fast
