// attn/io/keyvalue.hpp: the one `key value` text format the project reads and writes: a model
// folder's model.txt, a training run's train.txt and checkpoint files, a golden case's case.txt.
//   # a comment
//   n_layers 2
//   activation gelu
// One key per line, then one space (or tab), then its value: the rest of the line as it is (a
// path may hold spaces, even at its ends), less a Windows '\r'. Blank lines and lines starting
// with '#' are skipped, and so is indentation before a key. Each key at most once, with a value.
// What the keys mean, and which are allowed, is the reader's.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

struct KeyValue {
  std::size_t line;  // 1-based, for messages
  std::string key;
  std::string value;
};

// A line that is not `key value`, or a key given twice. The message starts with the line:
// "line 3 is not `key value`: 'n_layers'", "line 5: key 'n_heads' appears twice"; the caller
// puts the file's name before it.
class KeyValueError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The lines of `text`, in order. Throws KeyValueError.
std::vector<KeyValue> parse_key_values(std::string_view text);

}  // namespace attn
