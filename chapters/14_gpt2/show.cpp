// chapters/14_gpt2/show.cpp: the narration of chapter 14 (the sections main.cpp computes).
#include "show.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "attn/model/kvcache.hpp"
#include "attn/term/narrate.hpp"

namespace ch14 {

using attn::claim;
using attn::grouped;
using attn::num;

void show_folder(const attn::Gpt2Model& m, const FolderReport& r) {
  const attn::ModelSpec& s = m.spec;
  attn::section(1, "The folder: config.json and model.safetensors");
  fmt::print("folder {}: model.safetensors of {} bytes, tensors stored as {}{}; {}\n", r.folder,
             grouped(static_cast<double>(m.file_bytes)), m.dtype,
             m.dtype == "F32" ? "" : " (converted to float32 on load)",
             r.tokenizer ? "vocab.json and merges.txt (chapter 13's tokenizer)"
                         : "no tokenizer files (token ids only)");
  fmt::print(
      "config.json as the course's spec: V {}, T_max {}, C {}, H {} (hs {}), L {}, F {}, "
      "activation {}, LayerNorm eps 1e-5,\n  tied head, learned positions, and one part the "
      "course's attention lacked: attention biases (attn_bias 1)\n",
      s.vocab_size, s.block_size, s.n_embd, s.n_heads, s.head_size, s.n_layers, s.ffn_hidden,
      attn::activation_name(s.activation));
  const bool same = r.params_table == r.params_loaded;
  claim(same, "the parameter table counts the floats loaded");
  fmt::print("parameters: {} by the course's parameter table, {} loaded{}\n",
             grouped(static_cast<double>(r.params_table)),
             grouped(static_cast<double>(r.params_loaded)),
             same ? ": every float of the checkpoint has its row" : " (they differ!)");
  const std::size_t biases = s.n_layers * 4 * s.n_embd;
  fmt::print("  of them {} are the attention biases (4 C per block: b_q, b_k, b_v, b_o)\n",
             grouped(static_cast<double>(biases)));
}

void show_names(const attn::Gpt2Model& m) {
  attn::section(2, "The checkpoint's names, the course's names");
  fmt::print(
      "{} tensors, names {} the 'transformer.' prefix; Conv1D keeps (in, out), the "
      "course's layout, so no matrix is transposed\n",
      m.tensors.size(), m.prefixed ? "with" : "without");
  std::size_t width = 0;
  for (const attn::Gpt2Tensor& t : m.tensors)
    width = std::max(width, t.file_name.size() + t.shape.size() + 1);
  std::size_t later = 0;
  const std::string block0 = m.prefixed ? "transformer.h.0." : "h.0.";
  const std::string blocks = m.prefixed ? "transformer.h." : "h.";
  for (const attn::Gpt2Tensor& t : m.tensors) {
    const bool in_block = t.file_name.rfind(blocks, 0) == 0;
    if (in_block && t.file_name.rfind(block0, 0) != 0) {
      ++later;  // blocks 1..L-1: the same names, counted
      continue;
    }
    fmt::print("  {} -> {}\n", attn::align_left(t.file_name + " " + t.shape, width), t.course_name);
  }
  if (later > 0) {
    fmt::print("  ... and {} more of blocks 1 to {}, named like block 0's\n", later,
               m.spec.n_layers - 1);
  }
}

void show_cache(const attn::ModelSpec& s) {
  attn::section(3, "The KV cache");
  const std::size_t per_token = 2 * s.n_layers * s.n_embd * 4;
  fmt::print(
      "each token keeps a key and a value of C = {} floats in each of L = {} layers:\n"
      "  2 L C * 4 bytes = {} bytes per token; {} bytes for the T_max = {} positions\n",
      s.n_embd, s.n_layers, grouped(static_cast<double>(per_token)),
      grouped(static_cast<double>(per_token * s.block_size)), s.block_size);
}

void show_trace(const std::vector<TraceStep>& steps, std::size_t T, std::size_t L) {
  attn::section(4, "The prompt through the blocks: a shape trace");
  fmt::print(
      "the prompt's {} tokens as one (B, T, C) batch, block 0 step by step, then each "
      "block's output (rms: the root mean square of its values)\n",
      T);
  for (const TraceStep& s : steps) {
    fmt::print("  {} {}  rms {}\n", attn::align_left(s.where, 16), attn::align_left(s.shape, 16),
               num(s.rms, 4));
  }
  fmt::print(
      "every step keeps the shape (1, T, C): {} blocks of the same shape, then one "
      "(C, V) product gives the logits\n",
      L);
}

void show_generation(const GenerationReport& r, bool greedy) {
  fmt::print("{} new tokens after a prompt of {}, {}\n", r.generated, r.prompt,
             r.cached ? "with the KV cache (one prefill, then one lm_step per token)"
                      : "without the cache (a full forward per token, --no-cache)");
  if (!r.compared) return;
  const bool all = r.same == r.generated;
  claim(!greedy || all, "greedy generation is the same with and without the cache");
  if (all) {
    fmt::print("{}: the same {} tokens, token for token\n",
               r.cached ? "without the cache" : "with the cache", r.generated);
  } else {
    fmt::print(
        "{}: the first {} tokens alike, then a different draw (the logits differ in "
        "their last bits)\n",
        r.cached ? "without the cache" : "with the cache", r.same);
  }
}

void show_timing(const GenerationReport& r) {
  const double rate = r.seconds > 0.0 ? static_cast<double>(r.generated) / r.seconds : 0.0;
  fmt::print("generation: {} tokens in {} s ({} tokens/s)\n", r.generated, num(r.seconds, 3),
             num(rate, 1));
}

}  // namespace ch14
