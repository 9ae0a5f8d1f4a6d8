// chapters/13_tokens/main.cpp: chapter 13, from characters to tokens: byte-pair encoding by hand.
// The narrated walkthrough: text as UTF-8 bytes, GPT-2's pre-tokenization pattern, the first
// merge of training counted by hand and the merges learned on the corpus, one sentence encoded
// step by step by merge rank, decoding (with a character split over tokens), and what tokens buy:
// characters per token against the vocabulary size. The tokenizer is the library's
// (common/src/io/bpe.cpp, GPT-2's vocab.json + merges.txt); its tools:
//   13_tokens --train FILE --vocab-size N --save DIR
//   13_tokens --tokenizer DIR --encode TEXT       (the ids, space-separated, one line)
//   13_tokens --tokenizer DIR --decode IDS        (the text)
// Each section computes here and is printed by its show_ function in show.cpp.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/bpe.hpp"
#include "attn/io/corpus.hpp"
#include "attn/io/text.hpp"
#include "attn/term/cli.hpp"
#include "compare.hpp"
#include "exercises.hpp"
#include "show.hpp"

namespace {

using namespace ch13;

// Bounds of the flags (stated in --help).
constexpr std::size_t kMaxVocab = 65536;  // GPT-2 has 50,257; training stops early if the text
                                          // runs out of pairs

struct Options {
  std::size_t vocab_size = 512;
  std::size_t steps = 300;  // --compare
  bool compare = false, steps_given = false;
  std::string train_file, save_dir, tokenizer_dir, encode_text, decode_ids;
  bool train = false, save = false, tokenizer = false, encode = false, decode = false;
};

// ---- The functions the walkthrough calls: the library's, or with --mine the learner's ex13::.
struct Pieces {
  std::map<attn::TokenPair, std::size_t> (*count)(std::span<const int>);  // ex13.1
  std::vector<int> (*merge)(std::span<const int>, attn::TokenPair, int);  // ex13.2
  std::vector<int> (*encode_chunk)(const attn::Bpe&, std::string_view);   // ex13.3
  std::string (*decode)(const attn::Bpe&, std::span<const int>);          // ex13.4
};

Pieces reference_pieces() {
  return {&attn::count_pairs, &attn::merge_pair,
          [](const attn::Bpe& bpe, std::string_view chunk) { return bpe.encode_chunk(chunk); },
          [](const attn::Bpe& bpe, std::span<const int> ids) { return bpe.decode(ids); }};
}
Pieces learner_pieces() {
  return {&ex13::count_pairs, &ex13::merge_pair, &ex13::encode_chunk, &ex13::decode};
}

std::vector<std::string> token_texts(const attn::Bpe& bpe, std::span<const int> ids) {
  std::vector<std::string> out;
  for (const int id : ids) out.push_back(attn::gpt2_token_text(bpe.token_bytes(id)));
  return out;
}

std::vector<int> byte_ids(std::string_view bytes) {
  std::vector<int> ids;
  for (const char c : bytes) ids.push_back(static_cast<unsigned char>(c));  // id = byte
  return ids;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- The walkthrough: what each section computes (show.cpp prints it).

// 1. A few characters and their bytes.
BytesView text_as_bytes(std::string_view text) {
  BytesView v;
  v.text = text;
  v.n_bytes = text.size();
  for (const char32_t c : attn::decode_utf8(text)) {
    const std::string bytes = attn::encode_utf8(c);
    CharBytes cb;
    cb.shown = c == U' ' ? "' '" : bytes;
    for (const char b : bytes)
      cb.hex += fmt::format("{}{:02x}", cb.hex.empty() ? "" : " ", static_cast<unsigned char>(b));
    cb.gpt2 = attn::gpt2_token_text(bytes);
    v.chars.push_back(cb);
  }
  return v;
}

// 2. The chunks of a sentence.
ChunksView chunks_of(std::string_view text) {
  ChunksView v;
  v.text = text;
  for (const std::string_view chunk : attn::pretokenize(text)) v.chunks.emplace_back(chunk);
  return v;
}

// 3a. The first step of training by hand: count the pairs inside every chunk of the corpus.
FirstStep first_step(const Pieces& k, const attn::Corpus& corpus) {
  FirstStep s;
  s.origin = corpus.origin;
  s.bytes = corpus.text.size();
  const std::vector<std::string_view> chunks = attn::pretokenize(corpus.text);
  s.chunks = chunks.size();
  std::map<std::string_view, std::size_t> distinct;
  for (const std::string_view chunk : chunks) ++distinct[chunk];
  s.distinct = distinct.size();
  std::map<attn::TokenPair, std::size_t> total;  // pairs never cross a chunk's border
  for (const auto& [chunk, times] : distinct) {
    for (const auto& [pair, n] : k.count(byte_ids(chunk))) total[pair] += n * times;
  }
  std::vector<std::pair<attn::TokenPair, std::size_t>> sorted(total.begin(), total.end());
  // Most frequent first; ties to the smaller pair, as attn::Bpe::train breaks them.
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (std::size_t i = 0; i < std::min<std::size_t>(5, sorted.size()); ++i) {
    const auto [pair, n] = sorted[i];
    s.top.push_back({attn::gpt2_token_text(std::string(1, static_cast<char>(pair.first))),
                     attn::gpt2_token_text(std::string(1, static_cast<char>(pair.second))), n});
  }
  if (sorted.empty()) return s;
  // The merge, on the first chunk of the corpus that holds the pair twice (or once).
  const attn::TokenPair top = sorted.front().first;
  std::string_view example;
  std::size_t best = 0;
  for (std::size_t i = 0; i < chunks.size() && best < 2; ++i) {
    const auto counts = k.count(byte_ids(chunks[i]));
    const auto it = counts.find(top);
    if (it != counts.end() && it->second > best) {
      best = it->second;
      example = chunks[i];
    }
  }
  const std::vector<int> ids = byte_ids(example);
  const std::vector<int> merged = k.merge(ids, top, 256);
  const auto shown = [&](const std::vector<int>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      out += i ? "|" : "";
      out += v[i] == 256 ? "<" + s.top[0].left + s.top[0].right + ">"
                         : attn::gpt2_token_text(std::string(1, static_cast<char>(v[i])));
    }
    return out + "]";
  };
  s.example = shown(ids);
  s.example_merged = shown(merged);
  return s;
}

// 3b. Training to the vocabulary size asked for.
attn::Bpe train(const attn::Corpus& corpus, std::size_t vocab_size, const FirstStep& hand,
                bool timing, TrainView& view) {
  std::vector<attn::LearnedMerge> learned;
  const auto start = std::chrono::steady_clock::now();
  attn::Bpe bpe = attn::Bpe::train(corpus.text, vocab_size,
                                   [&](const attn::LearnedMerge& m) { learned.push_back(m); });
  view.seconds = seconds_since(start);
  view.timing = timing;
  view.vocab_asked = vocab_size;
  view.vocab = bpe.vocab_size();
  view.merges = bpe.merges().size();
  const auto row = [&](std::size_t rank) {
    const attn::LearnedMerge& m = learned[rank];
    return LearnedRow{rank, attn::gpt2_token_text(bpe.token_bytes(m.merge.left)),
                      attn::gpt2_token_text(bpe.token_bytes(m.merge.right)),
                      attn::gpt2_token_text(bpe.token_bytes(m.merge.id)), m.count};
  };
  for (std::size_t r = 0; r < std::min<std::size_t>(10, learned.size()); ++r)
    view.first.push_back(row(r));
  if (!learned.empty()) view.last = row(learned.size() - 1);
  view.first_is_top =
      !learned.empty() && !hand.top.empty() && view.first[0].left == hand.top[0].left &&
      view.first[0].right == hand.top[0].right && view.first[0].count == hand.top[0].count;
  return bpe;
}

// 4. One sentence: its longest chunk merged step by step, lowest rank first.
EncodeView encode_sentence(const Pieces& k, const attn::Bpe& bpe, std::string_view sentence) {
  EncodeView e;
  e.sentence = sentence;
  e.chars = attn::decode_utf8(sentence).size();
  for (const std::string_view chunk : attn::pretokenize(sentence))
    if (chunk.size() > e.chunk.size()) e.chunk = chunk;
  std::vector<int> ids;
  for (const char c : e.chunk) ids.push_back(bpe.byte_id(static_cast<unsigned char>(c)));
  e.start = token_texts(bpe, ids);
  // The loop of encoding, written out: the adjacent pair whose merge has the lowest rank.
  while (true) {
    std::optional<std::size_t> best, leftmost, best_at;
    attn::TokenPair pair{0, 0};
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto rank = bpe.rank_of({ids[i], ids[i + 1]});
      if (rank && !leftmost) leftmost = i;
      if (rank && (!best || *rank < *best)) {
        best = rank;
        best_at = i;
        pair = {ids[i], ids[i + 1]};
      }
    }
    if (!best) break;
    if (e.steps.empty()) e.rank_beats_position = *best_at != *leftmost;
    const int id = bpe.merges()[*best].id;
    if (!e.steps.empty() && *best <= e.steps.back().rank) e.ranks_grow = false;
    ids = k.merge(ids, pair, id);
    e.steps.push_back({*best,
                       "(" + attn::gpt2_token_text(bpe.token_bytes(pair.first)) + ", " +
                           attn::gpt2_token_text(bpe.token_bytes(pair.second)) + ")",
                       attn::gpt2_token_text(bpe.token_bytes(id)), token_texts(bpe, ids)});
  }
  e.same_as_encode_chunk = k.encode_chunk(bpe, e.chunk) == ids;
  for (const std::string_view chunk : attn::pretokenize(sentence)) {
    const std::vector<int> part = k.encode_chunk(bpe, chunk);
    e.ids.insert(e.ids.end(), part.begin(), part.end());
  }
  e.tokens = token_texts(bpe, e.ids);
  return e;
}

// 5. Decoding the sentence back, and a character whose bytes are split over tokens.
DecodeView decode_back(const Pieces& k, const attn::Bpe& bpe, const EncodeView& e) {
  DecodeView d;
  d.round_trip = k.decode(bpe, e.ids) == e.sentence;
  d.split_text = "\xF0\x9F\x99\x82";  // 🙂, U+1F642: 4 bytes
  d.split_ids = bpe.encode(d.split_text);
  d.split_tokens = token_texts(bpe, d.split_ids);
  d.together = k.decode(bpe, d.split_ids);
  for (const int id : d.split_ids) d.one_by_one += k.decode(bpe, std::span<const int>(&id, 1));
  for (std::size_t i = 0; i + 2 < d.one_by_one.size(); ++i)
    if (d.one_by_one.compare(i, 3, "\xEF\xBF\xBD") == 0) ++d.replaced_one_by_one;
  d.truncated = k.decode(bpe, std::span<const int>(d.split_ids).first(d.split_ids.size() - 1));
  return d;
}

// 6. Characters per token against the vocabulary size: trained on the first 90% of the corpus,
// measured on the rest.
Measure measure(const attn::Corpus& corpus, bool timing) {
  Measure m;
  m.origin = corpus.origin;
  m.timing = timing;
  std::size_t cut = corpus.text.size() * 9 / 10;
  while (cut < corpus.text.size() && (static_cast<unsigned char>(corpus.text[cut]) & 0xC0) == 0x80)
    ++cut;  // never inside a character
  const std::string_view train_text = std::string_view(corpus.text).substr(0, cut);
  const std::string_view val_text = std::string_view(corpus.text).substr(cut);
  m.train_bytes = train_text.size();
  m.val_chars = attn::decode_utf8(val_text).size();
  for (const std::size_t V : {256, 512, 1024, 2048}) {
    const auto start = std::chrono::steady_clock::now();
    const attn::Bpe bpe = attn::Bpe::train(train_text, V);
    MeasureRow row;
    row.seconds = seconds_since(start);
    row.vocab = bpe.vocab_size();
    row.merges = bpe.merges().size();
    row.val_tokens = bpe.encode(val_text).size();
    row.chars_per_token = static_cast<double>(m.val_chars) /
                          static_cast<double>(std::max<std::size_t>(1, row.val_tokens));
    m.rows.push_back(row);
  }
  return m;
}

// ---- The tools.

void run_train(const Options& o, bool timing) {
  const attn::Corpus corpus = attn::read_corpus(o.train_file);
  const auto start = std::chrono::steady_clock::now();
  const attn::Bpe bpe = attn::Bpe::train(corpus.text, o.vocab_size);
  const double seconds = seconds_since(start);
  const std::size_t tokens = bpe.encode(corpus.text).size();
  fmt::print("trained on {} ({} bytes): {} tokens, {} merges; {:.2f} bytes per token on it\n",
             o.train_file, corpus.text.size(), bpe.vocab_size(), bpe.merges().size(),
             static_cast<double>(corpus.text.size()) /
                 static_cast<double>(std::max<std::size_t>(1, tokens)));
  if (bpe.vocab_size() < o.vocab_size) {
    fmt::print("(the text ran out of pairs before {} tokens)\n", o.vocab_size);
  }
  if (timing) fmt::print("training took {:.3f} s\n", seconds);
  if (o.save) {
    bpe.save(o.save_dir);
    fmt::print("saved {}/vocab.json and {}/merges.txt\n", o.save_dir, o.save_dir);
  }
}

std::vector<int> parse_ids(std::string_view text, std::size_t V, const std::string& dir) {
  std::vector<int> ids;
  // A comma stands between two ids: "1,,2", ",1" and "1," hold an empty id, named by its place.
  const auto empty_id = [&] {
    return attn::UsageError(fmt::format(
        "--decode: id {} is empty (a comma with no id on one side): ids are whole numbers, "
        "separated by spaces or commas",
        ids.size() + 1));
  };
  bool comma = false;  // a comma was read since the last id
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ',') {
      if (comma || ids.empty()) throw empty_id();
      comma = true;
      ++i;
      continue;
    }
    if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n') {
      ++i;
      continue;
    }
    comma = false;
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != ',' && text[j] != '\t' &&
           text[j] != '\n')
      ++j;
    const std::string_view item = text.substr(i, j - i);
    std::uint64_t value = 0;
    bool ok = item.size() <= 9;
    for (const char c : item) {
      ok = ok && c >= '0' && c <= '9';
      value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (!ok) {
      throw attn::UsageError("--decode: '" + std::string(item.substr(0, 20)) +
                             "' is not a token id (ids are whole numbers, separated by spaces "
                             "or commas)");
    }
    if (value >= V) {
      throw attn::UsageError("--decode: token id " + std::string(item) + " is outside [0, " +
                             std::to_string(V) + ") of the tokenizer in " + dir);
    }
    ids.push_back(static_cast<int>(value));
    i = j;
  }
  if (comma) throw empty_id();
  return ids;
}

void run_tokenizer(const Options& o) {
  const attn::Bpe bpe = attn::Bpe::load(o.tokenizer_dir);
  if (o.encode) {
    const std::vector<int> ids = bpe.encode(o.encode_text);
    std::string line;
    for (std::size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
    fmt::print("{}\n", line);
  } else {
    const std::vector<int> ids = parse_ids(o.decode_ids, bpe.vocab_size(), o.tokenizer_dir);
    fmt::print("{}\n", bpe.decode(ids));
  }
}

void run(const attn::CommonOptions& common, const Options& o) {
  // Which mode: the tools' flags belong together, and never with the walkthrough's.
  if (o.compare && (o.train || o.tokenizer || common.mine)) {
    throw attn::UsageError("--compare runs on its own: leave out --train, --tokenizer and --mine");
  }
  if (o.steps_given && !o.compare) throw attn::UsageError("--steps needs --compare");
  if (o.train && o.tokenizer) throw attn::UsageError("--train and --tokenizer exclude each other");
  if (o.save && !o.train) throw attn::UsageError("--save DIR needs --train FILE");
  if ((o.encode || o.decode) && !o.tokenizer) {
    throw attn::UsageError(std::string(o.encode ? "--encode" : "--decode") +
                           " needs --tokenizer DIR (a folder with vocab.json and merges.txt)");
  }
  if (o.encode && o.decode) throw attn::UsageError("--encode and --decode exclude each other");
  if (o.tokenizer && !o.encode && !o.decode) {
    throw attn::UsageError("--tokenizer DIR needs --encode TEXT or --decode IDS");
  }
  if ((o.train || o.tokenizer) && common.mine) {
    throw attn::UsageError("--mine runs the walkthrough: leave out --train and --tokenizer");
  }
  if (o.compare) return run_compare(common, o.vocab_size, o.steps);
  if (o.train) {
    if (common.data) (void)attn::load_corpus(common.data);  // a bad --data is still an error
    return run_train(o, common.timing);
  }
  if (o.tokenizer) return run_tokenizer(o);

  const Pieces k = common.mine ? learner_pieces() : reference_pieces();
  const attn::Corpus corpus = attn::load_corpus(common.data);
  show_header(corpus.origin, common.mine);
  show_bytes(text_as_bytes("Löwe 🙂 naïve"));                                    // 1
  show_chunks(chunks_of("I'm sure HE'S seen 1609 sonnets,   my love!\n\n  Thine"));  // 2
  const FirstStep hand = first_step(k, corpus);                                      // 3
  show_first_step(hand);
  TrainView view;
  const attn::Bpe bpe = train(corpus, o.vocab_size, hand, common.timing, view);
  show_training(view);
  const EncodeView e = encode_sentence(k, bpe, "Shall I compare thee to a summer's day?");  // 4
  show_encoding(e);
  show_decoding(decode_back(k, bpe, e));         // 5
  show_measure(measure(corpus, common.timing));  // 6
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("13_tokens",
                "Chapter 13: from characters to tokens. Byte-level BPE as GPT-2 does it: UTF-8 "
                "bytes, GPT-2's pre-tokenization pattern, training by repeated most-frequent-"
                "pair merges, encoding by merge rank, decoding; files in GPT-2's vocab.json + "
                "merges.txt. Tools: --train FILE --vocab-size N --save DIR; --tokenizer DIR "
                "--encode TEXT (prints the ids); --tokenizer DIR --decode IDS (prints the text).");
  Options o;
  cli.add_size("--vocab-size", o.vocab_size,
               "V, tokens to learn (the 256 bytes included) for the walkthrough or --train", 256,
               kMaxVocab);
  cli.add_string("--train", o.train_file, "FILE: learn a tokenizer from this text file");
  cli.add_string("--save", o.save_dir,
                 "DIR: with --train, write DIR/vocab.json and DIR/merges.txt (GPT-2's formats)");
  cli.add_string("--tokenizer", o.tokenizer_dir,
                 "DIR: a folder with vocab.json and merges.txt (one --save wrote, or GPT-2's)");
  cli.add_string("--encode", o.encode_text,
                 "TEXT: with --tokenizer, print TEXT's token ids on one line, space-separated");
  cli.add_string("--decode", o.decode_ids,
                 "IDS: with --tokenizer, print the text of these ids (separated by spaces or "
                 "commas)");
  cli.add_flag("--compare", o.compare,
               "instead of the walkthrough: chapter 09's model trained on characters and on BPE "
               "tokens (V = --vocab-size) for the same steps, compared in bits per character");
  cli.add_size("--steps", o.steps, "with --compare, the steps of each run", 1,
               ch13::kMaxCompareSteps);
  o.steps_given = attn::flag_given(argc, argv, "--steps");
  o.train = attn::flag_given(argc, argv, "--train");
  o.save = attn::flag_given(argc, argv, "--save");
  o.tokenizer = attn::flag_given(argc, argv, "--tokenizer");
  o.encode = attn::flag_given(argc, argv, "--encode");
  o.decode = attn::flag_given(argc, argv, "--decode");
  return cli.run(argc, argv, [&](const attn::CommonOptions& common) { run(common, o); });
}
