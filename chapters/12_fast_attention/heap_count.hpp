// chapters/12_fast_attention/heap_count.hpp: the bytes this program holds through operator new,
// and the most it held at once. --mine measures with it what the learner's attention_tile keeps
// while it runs (heap_count.cpp replaces the global operator new and delete of the program).
#pragma once

namespace ch12 {

// Bytes handed out by operator new and not yet deleted (std::vector, xtensor, std::string, ...).
long heap_bytes();
// Starts a measurement: the peak becomes what is held now.
void reset_heap_peak();
// The most bytes held at once since reset_heap_peak().
long heap_peak();

}  // namespace ch12
