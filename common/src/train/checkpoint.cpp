// checkpoint.cpp: how a training run is written to disk and read back (chapter 09; see
// attn/train/checkpoint.hpp). The weights and AdamW's moments are model folders (save_lm and
// load_lm, common/src/model/lm_files.cpp); train.txt holds the config and the data stream's state.
#include "attn/train/checkpoint.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <tuple>

#include <fmt/format.h>

#include "attn/io/keyvalue.hpp"
#include "attn/io/npy.hpp"
#include "attn/core/limits.hpp"
#include "attn/model/block.hpp"
#include "attn/model/lm_files.hpp"
#include "attn/model/model.hpp"
#include "attn/model/params.hpp"

namespace attn {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void checkpoint_error(const fs::path& where, const std::string& what) {
  throw std::runtime_error(fmt::format("checkpoint '{}': {}", where.string(), what));
}

// fsync a file or folder, so a rename after it never exposes data still in the page cache.
void sync_path(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) checkpoint_error(p, std::string("cannot open to sync: ") + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) checkpoint_error(p, std::string("fsync failed: ") + std::strerror(err));
}

void sync_tree(const fs::path& dir) {
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    sync_path(e.path());
  }
  sync_path(dir);
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) checkpoint_error(path, std::string("cannot write: ") + std::strerror(errno));
}

std::string read_text(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) checkpoint_error(path, "missing (not a regular file)");
  // There a moment ago and gone now: a newer checkpoint removed this one in between.
  const char* vanished = "vanished while it was read (a newer checkpoint replaced it?)";
  const std::uintmax_t bytes = fs::file_size(path, ec);
  if (ec) checkpoint_error(path, vanished);
  if (bytes > (std::uintmax_t{16} << 20)) checkpoint_error(path, "too large");
  std::ifstream in(path, std::ios::binary);
  if (!in) checkpoint_error(path, vanished);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) checkpoint_error(path, "cannot read");
  return ss.str();
}

std::string bool_str(bool b) { return b ? "1" : "0"; }

// A path in train.txt's one-line values: a backslash and a line break escaped ("\\", "\n",
// "\r"), everything else as it is (spaces too: a value is the rest of its line).
std::string escape_path(const std::string& path) {
  std::string out;
  for (const char ch : path) {
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else {
      out += ch;
    }
  }
  return out;
}

std::optional<std::string> unescape_path(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (++i == text.size()) return std::nullopt;
    if (text[i] == '\\') {
      out += '\\';
    } else if (text[i] == 'n') {
      out += '\n';
    } else if (text[i] == 'r') {
      out += '\r';
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::string train_txt(const TrainState& s, const TrainConfig& c,
                      const std::optional<CorpusRecord>& corpus) {
  const Rng::State r = s.data_rng.state();
  std::string out = "# attention-from-scratch: a chapter 09 training checkpoint\n";
  const auto line = [&](std::string_view key, const std::string& value) {
    out += fmt::format("{} {}\n", key, value);
  };
  // Floats with 9 significant digits and doubles with 17 read back to the same bits.
  const auto f = [](float x) { return fmt::format("{:.9g}", x); };
  // Format 2: the model is model/model.txt's alone (attn::model_txt: the one description of a
  // model). Format 1, written before it, also listed the sizes and ablations here.
  line("format", "2");
  line("step", std::to_string(s.step));
  line("seed", std::to_string(c.seed));
  line("init", std::string(init_name(c.init)));
  line("batch_size", std::to_string(c.batch_size));
  line("steps", std::to_string(c.steps));
  line("lr", f(c.schedule.lr));
  line("lr_schedule", c.schedule.shape == LrShape::constant ? "constant" : "cosine");
  line("warmup", std::to_string(c.schedule.warmup));
  line("lr_total", std::to_string(c.schedule.total));
  line("min_lr", f(c.schedule.min_lr));
  line("beta1", f(c.adam.beta1));
  line("beta2", f(c.adam.beta2));
  line("adam_eps", f(c.adam.eps));
  line("weight_decay", f(c.adam.weight_decay));
  line("grad_clip", f(c.grad_clip));
  line("optimizer", std::string(optimizer_name(c.optimizer)));
  line("eval_interval", std::to_string(c.eval_interval));
  line("eval_iters", std::to_string(c.eval_iters));
  line("rng_state", std::to_string(r.state));
  line("rng_inc", std::to_string(r.inc));
  line("rng_has_spare", bool_str(r.has_spare));
  line("rng_spare", fmt::format("{:.17g}", r.spare));
  if (corpus) {  // the corpus it trains on: a resume reads it again, and refuses any other
    line("corpus_path", escape_path(corpus->path));
    line("corpus_bytes", std::to_string(corpus->bytes));
    line("corpus_fnv1a64", fmt::format("{:016x}", corpus->fnv1a64));
  }
  return out;
}

// `key value` lines (attn/io/keyvalue.hpp), by key.
std::map<std::string, std::string> parse_keys(const fs::path& path) {
  std::map<std::string, std::string> keys;
  try {
    for (KeyValue& kv : parse_key_values(read_text(path)))
      keys.emplace(kv.key, std::move(kv.value));
  } catch (const KeyValueError& e) {
    checkpoint_error(path, e.what());
  }
  return keys;
}

class KeyReader {
 public:
  KeyReader(fs::path path) : path_(std::move(path)), keys_(parse_keys(path_)) {}
  bool has(const std::string& key) const { return keys_.count(key) != 0; }
  const std::string& text(const std::string& key) const {
    const auto it = keys_.find(key);
    if (it == keys_.end()) checkpoint_error(path_, fmt::format("missing key '{}'", key));
    used_.push_back(key);
    return it->second;
  }
  // After every read: a key nobody read is a typo or a file from elsewhere, never ignored.
  void check_all_used() const {
    for (const auto& [key, value] : keys_) {
      if (std::find(used_.begin(), used_.end(), key) == used_.end()) {
        checkpoint_error(path_, fmt::format("unknown key '{}'", key));
      }
    }
  }
  std::uint64_t u64(const std::string& key) const {
    const std::string& v = text(key);
    std::size_t used = 0;
    unsigned long long x = 0;
    try {
      x = std::stoull(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || v.empty() || v[0] == '-') bad(key, v, "a non-negative integer");
    return x;
  }
  std::size_t size(const std::string& key, std::size_t max) const {
    const std::uint64_t x = u64(key);
    if (x > max) bad(key, text(key), fmt::format("at most {}", max));
    return static_cast<std::size_t>(x);
  }
  bool flag(const std::string& key) const {
    const std::string& v = text(key);
    if (v != "0" && v != "1") bad(key, v, "0 or 1");
    return v == "1";
  }
  double real(const std::string& key) const {
    const std::string& v = text(key);
    std::size_t used = 0;
    double x = 0.0;
    try {
      x = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || !std::isfinite(x)) bad(key, v, "a finite number");
    return x;
  }
  float real32(const std::string& key) const {
    const double x = real(key);
    if (std::abs(x) > static_cast<double>(std::numeric_limits<float>::max())) {
      bad(key, text(key), "a number within float32");
    }
    return static_cast<float>(x);
  }

 private:
  [[noreturn]] void bad(const std::string& key, const std::string& value,
                        const std::string& want) const {
    checkpoint_error(path_, fmt::format("key '{}' is '{}', expected {}", key, value, want));
  }
  fs::path path_;
  std::map<std::string, std::string> keys_;
  mutable std::vector<std::string> used_;
};

constexpr std::size_t kMaxSize = std::size_t{1} << 24;  // no size in a checkpoint is above this

std::string evals_tsv(const std::vector<EvalRecord>& evals) {
  std::string out = "step\ttrain_loss\tval_loss\n";
  for (const EvalRecord& e : evals) {
    out += fmt::format("{}\t{:.17g}\t{:.17g}\n", e.step, e.train_loss, e.val_loss);
  }
  return out;
}

// The estimates of a run at step `step`: one row per estimate, steps strictly increasing and
// none past the run's step (so at most step + 1 rows, as many as the run's own losses), losses
// finite cross-entropies (>= 0, within float32), as the run wrote them.
std::vector<EvalRecord> parse_evals(const fs::path& path, std::size_t step) {
  std::istringstream in(read_text(path));
  std::string line;
  std::getline(in, line);
  if (line != "step\ttrain_loss\tval_loss") checkpoint_error(path, "bad header line");
  std::vector<EvalRecord> out;
  std::size_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream fields(line);
    std::string step_text, train_text, val_text, rest;
    const auto bad = [&](std::string_view why) {
      checkpoint_error(path,
                       fmt::format("line {} is not `step train_loss val_loss`: {}", number, why));
    };
    if (!(fields >> step_text >> train_text >> val_text) || (fields >> rest)) {
      bad("expected three fields");
    }
    EvalRecord e{};
    const auto [end, err] =
        std::from_chars(step_text.data(), step_text.data() + step_text.size(), e.step);
    if (err != std::errc() || end != step_text.data() + step_text.size()) {
      bad(fmt::format("the step '{}' is not a non-negative integer", step_text));
    }
    if (e.step > step) {
      bad(fmt::format("the step {} is past the checkpoint's step {}", e.step, step));
    }
    if (!out.empty() && e.step <= out.back().step) {
      bad(fmt::format("the step {} does not follow the step {} before it", e.step,
                      out.back().step));
    }
    for (const auto& [key, text, value] : {std::tuple{"train_loss", &train_text, &e.train_loss},
                                           std::tuple{"val_loss", &val_text, &e.val_loss}}) {
      std::size_t used = 0;
      double x = -1.0;
      try {
        x = std::stod(*text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text->size() || !(x >= 0.0) ||
          x > static_cast<double>(std::numeric_limits<float>::max())) {
        bad(fmt::format("{} '{}' is not a cross-entropy (a finite number >= 0)", key, *text));
      }
      *value = x;
    }
    out.push_back(e);
  }
  return out;
}

std::string checkpoint_name(std::size_t step) { return fmt::format("ckpt-{:06}", step); }

// ---- What a run owns in its folder: DIR/checkpoints.txt, one name per line.

constexpr const char* kRunList = "checkpoints.txt";

// A name a save makes: ckpt-N, its temporary ckpt-N.tmp-PID, or current.tmp-PID. Plain names
// only, so an edited list can never reach outside the folder or delete `lock`.
bool is_run_name(const std::string& name) {
  if (name.find('/') != std::string::npos || name == "." || name == "..") return false;
  return name.rfind("ckpt-", 0) == 0 || name.rfind("current.tmp-", 0) == 0;
}

// The checkpoint `current` names, when it is a symlink to a plain ckpt- name (as saves make it).
std::optional<std::string> current_target(const fs::path& dir) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(dir / "current", ec);
  if (ec) return std::nullopt;
  const std::string name = target.string();
  if (name.rfind("ckpt-", 0) != 0 || !is_run_name(name)) return std::nullopt;
  return name;
}

// The names the run in `dir` made. Without a list (a run saved before the list existed, or no
// run yet): the checkpoint `current` names, if any.
std::vector<std::string> read_run_list(const fs::path& dir) {
  const fs::path path = dir / kRunList;
  std::error_code ec;
  std::vector<std::string> names;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    if (const auto target = current_target(dir)) names.push_back(*target);
    return names;
  }
  std::istringstream in(read_text(path));
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    if (!is_run_name(line)) {
      checkpoint_error(path, fmt::format("line {} is '{}', expected a name this run made "
                                         "(ckpt-N, ckpt-N.tmp-PID or current.tmp-PID)",
                                         number, line));
    }
    if (std::find(names.begin(), names.end(), line) == names.end()) names.push_back(line);
  }
  return names;
}

// Replaces the list atomically (a temporary file, fsync'ed, renamed over it).
void write_run_list(const fs::path& dir, const std::vector<std::string>& names) {
  std::string text =
      "# attention-from-scratch: the names this run made in its folder; a save deletes only "
      "these\n";
  for (const std::string& n : names) text += n + "\n";
  const fs::path tmp = dir / (std::string(kRunList) + ".tmp");
  write_text(tmp, text);
  sync_path(tmp);
  std::error_code ec;
  fs::rename(tmp, dir / kRunList, ec);
  if (ec) checkpoint_error(dir / kRunList, "cannot write: " + ec.message());
  sync_path(dir);
}

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A run folder as saves make it: `current` a symlink to a ckpt- name. (A user's own `current`
// link, e.g. to a release folder, is not a run.)
bool is_run_folder(const fs::path& dir) { return current_target(dir).has_value(); }

// A folder a save finished: its MANIFEST.txt lists what it held.
bool is_saved_folder(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kManifestName, ec);
}

// The folders strictly above `path`, nearest first: as typed ("runs/a/current" -> "runs/a",
// "runs"), then, resolved through links, the absolute ones the spelling does not show.
std::vector<fs::path> folders_above(const fs::path& path) {
  std::vector<fs::path> out;
  fs::path p = path.lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();  // "RUN/current/"
  for (fs::path q = p.parent_path();; q = q.parent_path()) {
    if (q.empty()) break;
    out.push_back(q);
    if (q == q.parent_path()) break;
  }
  if (p.is_relative()) out.emplace_back(".");
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(fs::absolute(p, ec), ec);
  if (!ec) {
    for (fs::path q = resolved.parent_path();; q = q.parent_path()) {
      out.push_back(q);
      if (q == q.parent_path()) break;
    }
  }
  return out;
}

}  // namespace

CorpusRecord record_corpus(const fs::path& path, std::string_view text) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) absolute = path;
  return {absolute.lexically_normal().string(), text.size(), fnv1a64(text)};
}

std::string corpus_fingerprint(const CorpusRecord& r) {
  return fmt::format("{} bytes, fnv1a64 {:016x}", r.bytes, r.fnv1a64);
}

void save_checkpoint(const fs::path& dir, const TrainState& s, const TrainConfig& config,
                     const Vocab& vocab, const std::optional<CorpusRecord>& corpus) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) checkpoint_error(dir, "cannot create the folder");
  const std::string name = checkpoint_name(s.step);
  const fs::path final_path = dir / name;
  const fs::path current = dir / "current";
  // The same step twice (an eval and the end of the run): already saved, and identical.
  if (fs::read_symlink(current, ec) == fs::path(name) && fs::is_directory(final_path)) return;

  // 0. The names this save makes go on the run's list before they exist, so that whatever
  // happens next, the run knows them as its own; a name in the way that the run did not make
  // is someone else's, and stays.
  const std::string tmp_name = fmt::format("{}.tmp-{}", name, ::getpid());
  const std::string link_name = fmt::format("current.tmp-{}", ::getpid());
  std::vector<std::string> owned = read_run_list(dir);
  for (const std::string& n : {name, tmp_name, link_name}) {
    if (fs::exists(fs::symlink_status(dir / n, ec)) && !listed(owned, n)) {
      checkpoint_error(dir / n,
                       "not a checkpoint of this run (checkpoints.txt does not list it), and the "
                       "save would replace it: move it out of the run folder");
    }
    if (!listed(owned, n)) owned.push_back(n);
  }
  write_run_list(dir, owned);

  // 1. Everything into a temporary folder; a save that fails removes it (a full disk stays no
  // fuller than it was).
  const fs::path tmp = dir / tmp_name;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) checkpoint_error(tmp, "cannot create: " + ec.message());
  try {
    save_lm(tmp / "model", s.weights, config.model);  // with model.txt: chapters 07 and 10 load it
    save_lm(tmp / "adam_m", s.adam_m);
    save_lm(tmp / "adam_v", s.adam_v);
    write_text(tmp / "train.txt", train_txt(s, config, corpus));
    write_text(tmp / "evals.tsv", evals_tsv(s.evals));
    write_text(tmp / "vocab.txt", encode_utf8(vocab.chars()));
    // DIR/model alone suffices to generate:
    write_text(tmp / "model" / "vocab.txt", encode_utf8(vocab.chars()));
    Vector losses = xt::adapt(s.losses, std::array<std::size_t, 1>{s.losses.size()});
    save_npy(tmp / "losses.npy", losses);
    // The manifests last: each folder's files, sizes and checksums as they are now.
    for (const char* sub : {"model", "adam_m", "adam_v"}) write_manifest(tmp / sub);
    write_manifest(tmp);
    // 2. On disk for real, then under its final name.
    sync_tree(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::remove_all(final_path, ec);  // a stale leftover of this run at the same step (it is listed)
  fs::rename(tmp, final_path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove_all(tmp, ec);
    checkpoint_error(final_path, "cannot rename the new checkpoint: " + why);
  }
  sync_path(dir);
  // 3. Switch `current` atomically: a new symlink renamed over the old one.
  const fs::path link_tmp = dir / link_name;
  fs::remove(link_tmp, ec);
  fs::create_directory_symlink(name, link_tmp, ec);
  if (ec) checkpoint_error(link_tmp, "cannot create a symlink: " + ec.message());
  fs::rename(link_tmp, current, ec);
  if (ec) checkpoint_error(current, "cannot switch to the new checkpoint: " + ec.message());
  if (!fs::is_symlink(fs::symlink_status(dir / "model"))) {
    fs::create_directory_symlink(fs::path("current") / "model", dir / "model", ec);
  }
  sync_path(dir);
  // 4. Only now the run's older checkpoints (and leftovers of its interrupted saves) go: the
  // names on its list, nothing else.
  for (const std::string& other : owned) {
    if (other != name) fs::remove_all(dir / other, ec);
  }
  write_run_list(dir, {name});
}

bool find_vocab(const fs::path& model_dir, Vocab& out, std::string_view kind) {
  for (const fs::path& candidate : {model_dir / "vocab.txt", model_dir / ".." / "vocab.txt"}) {
    std::error_code ec;
    if (!fs::is_regular_file(candidate, ec)) continue;
    const auto bad = [&](const std::string& what) {
      if (kind == "checkpoint") checkpoint_error(candidate, what);
      throw std::runtime_error(
          fmt::format("{} '{}': vocab.txt: {}", kind, candidate.parent_path().string(), what));
    };
    const std::string bytes = read_text(candidate);
    std::u32string chars;
    try {
      chars = decode_utf8(bytes);
    } catch (const std::runtime_error& e) {  // "invalid UTF-8 at byte N": say in which file
      bad(e.what());
    }
    if (chars.empty()) bad("empty vocabulary");
    if (!std::is_sorted(chars.begin(), chars.end()) ||
        std::adjacent_find(chars.begin(), chars.end()) != chars.end()) {
      bad("the characters must be sorted and unique");
    }
    out = Vocab(chars);
    return true;
  }
  return false;
}

Checkpoint load_checkpoint(const fs::path& dir) {
  std::error_code ec;
  fs::path path = dir;
  if (fs::exists(dir / "current", ec)) {
    path = fs::canonical(dir / "current", ec);
    if (ec) checkpoint_error(dir / "current", "broken link: " + ec.message());
  } else if (!fs::is_regular_file(dir / "train.txt", ec)) {
    checkpoint_error(dir, "no checkpoint here (expected DIR/current or DIR/train.txt)");
  } else {
    path = fs::canonical(dir, ec);
    if (ec) checkpoint_error(dir, ec.message());
  }
  // Each folder of a checkpoint ends with its manifest: without it a folder's tensors could be
  // swapped or replaced unnoticed (load_lm verifies a manifest only when there is one).
  for (const char* folder : {"model", "adam_m", "adam_v"}) {
    if (!fs::exists(fs::symlink_status(path / folder / kManifestName, ec))) {
      checkpoint_error(path / folder / kManifestName,
                       "missing: every folder of a checkpoint ends with one (was the folder "
                       "edited? train again or resume from an earlier checkpoint)");
    }
  }
  // From here on every file comes from `path`, the one checkpoint resolved above, and must be
  // what its manifest says (model/, adam_m/ and adam_v/ are checked by load_lm); the
  // checkpoint's own manifest lists theirs too (since they are listed), so no folder can be swapped
  // whole for another checkpoint's.
  bool has_manifest = false;
  try {
    has_manifest = verify_manifest(path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("checkpoint {}", e.what()));
  }
  if (!has_manifest) {
    checkpoint_error(path / kManifestName, "missing (every checkpoint ends with one)");
  }
  const KeyReader k(path / "train.txt");
  const std::string& format = k.text("format");
  if (format != "1" && format != "2") {
    checkpoint_error(path / "train.txt",
                     fmt::format("format is '{}': written by another version of the course (this "
                                 "one reads formats 1 and 2); train it again with this version",
                                 format));
  }

  // 1. The model: model/model.txt describes it (attn::model_txt). A format-1 train.txt, written
  //    before that, also lists the sizes and ablations: they must agree with model.txt, and
  //    give what its model.txt did not say then (V, C, T_max, dropout).
  std::optional<ModelChoices> described;
  try {
    described = read_model_file(path / "model");
  } catch (const std::exception& e) {
    checkpoint_error(path, e.what());
  }
  ModelChoices m;
  if (format == "1") {
    m.n_heads = k.size("n_heads", kMaxSize);
    m.n_layers = k.size("n_layers", kMaxSize);
    m.ablations.tied_head = k.flag("tied_head");
    m.ablations.layer_norm = k.flag("use_layer_norm");
    m.ablations.residual = k.flag("residual");
    m.ablations.ffn = k.flag("use_ffn");
    m.ablations.attn_proj = k.flag("attn_proj");
    if (const std::size_t F = k.size("ffn_hidden", kMaxSize); F != 0) m.ffn_hidden = F;
    try {
      m.activation = parse_activation(k.text("activation"));
    } catch (const std::invalid_argument& e) {
      checkpoint_error(path / "train.txt", e.what());
    }
    // (Absent from checkpoints written before dropout: 0.)
    if (k.has("dropout")) m.dropout = k.real32("dropout");
    m.vocab_size = k.size("vocab_size", kMaxSize);
    m.block_size = k.size("block_size", kMaxSize);
    m.n_embd = k.size("n_embd", kMaxSize);
    if (described) {
      const ModelChoices& d = *described;
      const auto agree = [&](std::string_view key, auto listed, auto said) {
        if (listed != said) {
          checkpoint_error(path / "train.txt",
                           fmt::format("{} is {}, but model/model.txt says {}: the two files "
                                       "describe different models",
                                       key, listed, said));
        }
      };
      agree("n_heads", m.n_heads, d.n_heads);
      agree("n_layers", m.n_layers, d.n_layers);
      agree("tied_head", m.ablations.tied_head, d.ablations.tied_head);
      agree("use_layer_norm", m.ablations.layer_norm, d.ablations.layer_norm);
      agree("residual", m.ablations.residual, d.ablations.residual);
      agree("use_ffn", m.ablations.ffn, d.ablations.ffn);
      agree("attn_proj", m.ablations.attn_proj, d.ablations.attn_proj);
      // F: unset (0 in the file) means the default width of C, so compare the widths.
      const std::size_t default_f =
          d.ffn == FfnKind::swiglu ? swiglu_width(m.n_embd) : 4 * m.n_embd;
      agree("ffn_hidden", m.ffn_hidden.value_or(default_f), d.ffn_hidden.value_or(default_f));
      agree("activation", activation_name(m.activation), activation_name(d.activation));
      if (d.positions != Positions::learned) agree("block_size", m.block_size, d.block_size);
      // The parts were model.txt's only; the sizes and dropout train.txt's.
      const ModelChoices listed = m;
      m = d;
      m.vocab_size = listed.vocab_size;
      m.block_size = listed.block_size;
      m.n_embd = listed.n_embd;
      m.dropout = listed.dropout;
    }
  } else {
    if (!described) checkpoint_error(path / "model" / "model.txt", "missing");
    m = *described;
  }
  TrainConfig c;
  try {
    c.model = resolve_spec(m);
  } catch (const SpecError& e) {
    checkpoint_error(path / "model" / "model.txt", e.what());
  }

  // 2. The training.
  c.seed = k.u64("seed");
  try {
    c.init = parse_init(k.text("init"));
    c.schedule.shape = parse_lr_shape(k.text("lr_schedule"));
  } catch (const std::invalid_argument& e) {
    checkpoint_error(path / "train.txt", e.what());
  }
  c.batch_size = k.size("batch_size", kMaxSize);
  c.steps = k.size("steps", kMaxSize);
  c.schedule.lr = k.real32("lr");
  c.schedule.warmup = k.size("warmup", kMaxSize);
  c.schedule.total = k.size("lr_total", kMaxSize);
  c.schedule.min_lr = k.real32("min_lr");
  c.adam.beta1 = k.real32("beta1");
  c.adam.beta2 = k.real32("beta2");
  c.adam.eps = k.real32("adam_eps");
  c.adam.weight_decay = k.real32("weight_decay");
  c.grad_clip = k.real32("grad_clip");
  // (Absent from checkpoints written before the SGD comparison: AdamW.)
  if (k.has("optimizer")) {
    try {
      c.optimizer = parse_optimizer(k.text("optimizer"));
    } catch (const std::invalid_argument& e) {
      checkpoint_error(path / "train.txt", e.what());
    }
  }
  c.eval_interval = k.size("eval_interval", kMaxSize);
  c.eval_iters = k.size("eval_iters", kMaxSize);
  // The same bounds as the flags: a value no command line could give is refused by name.
  try {
    check_train_config(c);
  } catch (const std::invalid_argument& e) {
    checkpoint_error(path / "train.txt", e.what());
  }

  // 3. The weights, exactly the tensors of that spec (the sizes of wte and wpe must agree).
  LmWeights weights;
  LmWeights adam_m;
  LmWeights adam_v;
  ModelSpec loaded = c.model;
  try {
    weights = load_lm(path / "model", loaded);
    ModelSpec moments = c.model;
    adam_m = load_lm(path / "adam_m", moments);
    adam_v = load_lm(path / "adam_v", moments);
  } catch (const std::exception& e) {
    checkpoint_error(path, e.what());
  }
  if (!(loaded == c.model)) {
    checkpoint_error(path / "train.txt",
                     fmt::format("vocab_size, block_size or n_embd ({}, {}, {}) do not match the "
                                 "model's tensors ({}, {}, {})",
                                 c.model.vocab_size, c.model.block_size, c.model.n_embd,
                                 loaded.vocab_size, loaded.block_size, loaded.n_embd));
  }
  if (!same_param_shapes(weights, adam_m) || !same_param_shapes(weights, adam_v)) {
    checkpoint_error(path, "the AdamW moments do not have the model's shapes");
  }
  for (const NamedTensor& t : lm_parameters(adam_v)) {  // a mean of squares is never negative
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      if (t.values[i] < 0.0f) {
        checkpoint_error(path / "adam_v",
                         fmt::format("{}.npy holds {} at flat index {}: second moments are never "
                                     "negative",
                                     t.name, t.values[i], i));
      }
    }
  }
  const ModelSpec& ms = c.model;

  Vocab vocab(U"?");
  if (!find_vocab(path, vocab)) checkpoint_error(path / "vocab.txt", "missing");
  if (vocab.size() != ms.vocab_size) {
    checkpoint_error(path / "vocab.txt", fmt::format("{} characters, but the model has V = {}",
                                                     vocab.size(), ms.vocab_size));
  }

  TrainState s;
  s.step = k.size("step", kMaxSize);
  s.weights = std::move(weights);
  s.grads = lm_zeros_like(s.weights);
  s.adam_m = std::move(adam_m);
  s.adam_v = std::move(adam_v);
  Rng::State r;
  r.state = k.u64("rng_state");
  r.inc = k.u64("rng_inc");
  r.has_spare = k.flag("rng_has_spare");
  r.spare = k.real("rng_spare");
  if (r.inc % 2 == 0) checkpoint_error(path / "train.txt", "rng_inc must be odd");
  if (s.step > c.steps) {
    checkpoint_error(path / "train.txt",
                     fmt::format("step {} is beyond the run's steps {}", s.step, c.steps));
  }
  // The corpus, recorded since the record exists (all three keys, or none: an older checkpoint).
  std::optional<CorpusRecord> corpus;
  if (k.has("corpus_path") || k.has("corpus_bytes") || k.has("corpus_fnv1a64")) {
    CorpusRecord record;
    const std::string& escaped = k.text("corpus_path");
    const std::optional<std::string> corpus_path = unescape_path(escaped);
    if (!corpus_path || corpus_path->empty()) {
      checkpoint_error(path / "train.txt",
                       fmt::format("key 'corpus_path' is '{}', expected a path", escaped));
    }
    record.path = *corpus_path;
    record.bytes = k.u64("corpus_bytes");
    const std::string& hex = k.text("corpus_fnv1a64");
    const auto [end, err] =
        std::from_chars(hex.data(), hex.data() + hex.size(), record.fnv1a64, 16);
    if (hex.size() != 16 || err != std::errc() || end != hex.data() + hex.size()) {
      checkpoint_error(path / "train.txt",
                       fmt::format("key 'corpus_fnv1a64' is '{}', expected 16 hex digits", hex));
    }
    corpus = record;
  }
  k.check_all_used();
  s.data_rng.restore(r);
  try {
    const Vector losses = load_npy<1>(path / "losses.npy");
    s.losses.assign(losses.begin(), losses.end());
  } catch (const std::exception& e) {
    checkpoint_error(path, e.what());
  }
  if (s.losses.size() != s.step) {
    checkpoint_error(path / "losses.npy",
                     fmt::format("{} losses for {} steps", s.losses.size(), s.step));
  }
  s.evals = parse_evals(path / "evals.tsv", s.step);
  s.losses.reserve(std::max(c.steps, s.step));
  return {std::move(s), c, std::move(vocab), std::move(corpus)};
}

// ---- The bounds of a config (the flags' and train.txt's).

void check_train_config(const TrainConfig& c) {
  namespace L = train_limits;
  const auto size = [](std::string_view key, std::size_t v, std::size_t lo, std::size_t hi) {
    if (v < lo) {
      throw std::invalid_argument(fmt::format("{} is {}, expected at least {}", key, v, lo));
    }
    if (v > hi) {
      throw std::invalid_argument(fmt::format("{} is {}, expected at most {}", key, v, hi));
    }
  };
  // [lo, hi], or (lo, hi] / [lo, hi) where the open end is marked.
  const auto real = [](std::string_view key, float v, float lo, bool lo_open, float hi,
                       bool hi_open) {
    const bool ok =
        std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
    if (!ok) {
      throw std::invalid_argument(fmt::format("{} is {}, expected {}{}, {}{}", key, v,
                                              lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]"));
    }
  };
  const ModelSpec& m = c.model;
  size("n_embd", m.n_embd, 1, L::kMaxEmbd);
  size("n_heads", m.n_heads, 1, L::kMaxHeads);
  size("n_layers", m.n_layers, 1, L::kMaxLayers);
  size("block_size", m.block_size, 1, L::kMaxBlock);
  size("ffn_hidden", m.ffn_hidden, 1, 4 * L::kMaxEmbd);
  size("batch_size", c.batch_size, 1, L::kMaxBatch);
  size("steps", c.steps, 1, L::kMaxSteps);
  size("eval_interval", c.eval_interval, 1, L::kMaxSteps);
  size("eval_iters", c.eval_iters, 1, L::kMaxEvalIters);
  size("warmup", c.schedule.warmup, 0, L::kMaxSteps);
  size("lr_total", c.schedule.total, 0, L::kMaxSteps);
  if (c.batch_size * m.block_size > L::kMaxTokensPerStep) {
    throw std::invalid_argument(
        fmt::format("batch_size {} x block_size {} = {} tokens per step, at most {} are allowed",
                    c.batch_size, m.block_size, c.batch_size * m.block_size, L::kMaxTokensPerStep));
  }
  // The memory of a step: what the backward keeps (the flags are refused the same way first, by
  // flag name, in chapter 09).
  const std::size_t kept = block_activation_floats(c.batch_size, m.block_size, m.n_embd,
                                                   m.ffn_hidden, m.n_heads, lm_block_config(m));
  if (kept > L::kMaxKeptFloats / m.n_layers) {
    throw std::invalid_argument(fmt::format(
        "batch_size {}, block_size {}, n_embd {}, n_heads {} and n_layers {} would keep {} of "
        "activations for the backward, at most {} are allowed",
        c.batch_size, m.block_size, m.n_embd, m.n_heads, m.n_layers,
        bytes_text(static_cast<std::uint64_t>(kept) * m.n_layers * sizeof(float)),
        bytes_text(std::uint64_t{L::kMaxKeptFloats} * sizeof(float))));
  }
  real("lr", c.schedule.lr, 0.0f, true, 1.0f, false);
  real("min_lr", c.schedule.min_lr, 0.0f, false, c.schedule.lr, false);
  real("beta1", c.adam.beta1, 0.0f, false, 1.0f, true);
  real("beta2", c.adam.beta2, 0.0f, false, 1.0f, true);
  real("adam_eps", c.adam.eps, 0.0f, true, 1.0f, false);
  real("weight_decay", c.adam.weight_decay, 0.0f, false, 1.0f, false);
  real("grad_clip", c.grad_clip, 0.0f, false, 1e6f, false);
}

// ---- Who owns a run folder.

bool holds_run(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(dir / "current", ec));
}

fs::path run_folder_of(const fs::path& path) {
  fs::path p = path.lexically_normal();
  if (p.has_filename() == false && p.has_parent_path()) p = p.parent_path();  // "RUN/current/"
  if (holds_run(p)) return path;
  for (const fs::path& above : folders_above(path)) {
    if (is_run_folder(above)) return above;
  }
  return path;
}

void remove_run(const fs::path& dir) {
  const std::vector<std::string> owned = read_run_list(dir);  // before `current` goes
  std::error_code ec;
  fs::remove(dir / "current", ec);
  fs::remove(dir / "model", ec);
  for (const std::string& name : owned) fs::remove_all(dir / name, ec);
  fs::remove(dir / kRunList, ec);
}

void check_save_folder(const fs::path& dir, std::string_view flag) {
  const std::string shown = dir.string();
  for (const fs::path& above : folders_above(dir)) {
    if (is_run_folder(above)) {
      throw std::invalid_argument(fmt::format(
          "{} '{}' is inside the run folder '{}', which holds only what its run wrote (its "
          "checkpoints, current and model): give a folder outside it",
          flag, shown, above.string()));
    }
  }
  if (is_saved_folder(dir)) {
    throw std::invalid_argument(
        fmt::format("{} '{}' is a saved checkpoint or model folder (its MANIFEST.txt lists what "
                    "it holds, and a new file would contradict it): give a folder of its own",
                    flag, shown));
  }
  for (const fs::path& above : folders_above(dir)) {
    if (is_saved_folder(above)) {
      throw std::invalid_argument(
          fmt::format("{} '{}' is inside '{}', a saved checkpoint or model folder (its "
                      "MANIFEST.txt lists what it holds, and a new file would contradict it): "
                      "give a folder of its own",
                      flag, shown, above.string()));
    }
  }
}

RunLock::RunLock(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    checkpoint_error(dir, "cannot create the folder" + (ec ? ": " + ec.message() : std::string()));
  }
  const fs::path path = dir / "lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) checkpoint_error(path, std::string("cannot open: ") + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buffer[32] = {};
    const ssize_t got = ::pread(fd_, buffer, sizeof buffer - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) {
      checkpoint_error(path, std::string("cannot lock: ") + std::strerror(err));
    }
    std::string pid(buffer, got > 0 ? static_cast<std::size_t>(got) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == '\0')) pid.pop_back();
    checkpoint_error(dir, fmt::format("another trainer (pid {}) is saving to this folder: wait for "
                                      "it to finish, or stop it",
                                      pid.empty() ? "unknown" : pid));
  }
  const std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    checkpoint_error(path, std::string("cannot write: ") + std::strerror(err));
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace attn
