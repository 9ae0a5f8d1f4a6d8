// chapters/14_gpt2/show.hpp: what the sections of chapter 14 compute (the structs main.cpp fills)
// and the functions of show.cpp that print them, each sentence chosen by its numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/model/gpt2.hpp"
#include "attn/model/model.hpp"

namespace ch14 {

// 1. The folder: its files, config.json as the course's spec, the parameters.
struct FolderReport {
  std::string folder;             // as typed, or the shipped fixture's path from the root
  bool tokenizer = false;         // vocab.json and merges.txt are there
  std::size_t params_table = 0;   // the parameter table's count for the spec
  std::size_t params_loaded = 0;  // floats actually loaded
};
void show_folder(const attn::Gpt2Model& m, const FolderReport& r);

// 2. Every tensor name of the checkpoint and where it went.
void show_names(const attn::Gpt2Model& m);

// 3. The KV cache: bytes per token, and at T_max.
void show_cache(const attn::ModelSpec& spec);

// 4. The prompt through the blocks: a shape trace.
struct TraceStep {
  std::string where;  // "embed", "h0.ln1", ..., "ln_f", "logits"
  std::string shape;  // "(1, 12, 768)"
  double rms = 0.0;   // root mean square of the values
};
void show_trace(const std::vector<TraceStep>& steps, std::size_t T, std::size_t L);

// 5. The generated continuation (streamed before this is called) and the checks.
struct GenerationReport {
  std::size_t prompt = 0;     // prompt tokens
  std::size_t generated = 0;  // new tokens
  bool cached = true;         // generated with the KV cache (else --no-cache)
  bool compared = false;      // the other loop was run too
  std::size_t same = 0;       // leading tokens the other loop chose alike
  double seconds = 0.0;       // the generation's wall time
};
void show_generation(const GenerationReport& r, bool greedy);

// The last line of a --timing run: "generation: N tokens in S s (R tokens/s)".
void show_timing(const GenerationReport& r);

}  // namespace ch14
