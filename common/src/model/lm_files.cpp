// lm_files.cpp: the language model of chapter 07 as a folder of .npy files (one per tensor, named
// like the golden fixtures) plus model.txt, its architecture: what chapter 07 loads, chapter 09's
// checkpoints write and chapter 10 generates from (see attn/model/lm_files.hpp).
#include "attn/model/lm_files.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "attn/core/check.hpp"
#include "attn/io/keyvalue.hpp"
#include "attn/io/npy.hpp"
#include "attn/model/params.hpp"

namespace attn {

namespace fs = std::filesystem;

namespace {

// The block tensors, in the order they are read and named in errors: h{i}.<name>.npy.

// Reads `dir/name` as float32 and checks its shape; every problem names the file.
class ModelReader {
 public:
  explicit ModelReader(fs::path dir) : dir_(std::move(dir)) {}
  bool had_manifest = false;  // the folder's MANIFEST.txt was there, and verified, first

  [[noreturn]] void fail(std::string_view what) const {
    throw std::runtime_error(fmt::format("model '{}': {}", dir_.string(), what));
  }

  // The array `name` with whatever shape it has (for wte and wpe, which define the sizes).
  NpyArray read(const std::string& name) const {
    const fs::path path = dir_ / name;
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(path, ec);
    if (!fs::exists(st)) {
      // There when the manifest was checked, gone now with the folder (or its manifest): a
      // trainer's newer checkpoint replaced this one while it was read, not a broken folder.
      if (had_manifest && (!fs::exists(dir_ / kManifestName, ec) || !fs::exists(dir_, ec))) {
        fail(name +
             " vanished while the folder was read (a newer checkpoint replaced it?): "
             "load it again");
      }
      fail("missing " + name);
    }
    // A link could point anywhere (one large tensor under many names): a model folder holds
    // its tensors itself.
    if (!fs::is_regular_file(st)) fail(name + " is not a regular file (links are not followed)");
    NpyArray a = read_npy(path);  // a corrupt file: "<dir>/<name>: not a .npy file ..."
    if (a.descr != "<f4" && a.descr != "<f8") {
      fail(
          fmt::format("{} holds '{}', expected float32 ('<f4') or float64 ('<f8')", name, a.descr));
    }
    return a;
  }

  template <std::size_t N>
  Tensor<N> load(const std::string& name, const std::array<std::size_t, N>& want) const {
    const NpyArray a = read(name);
    if (!std::equal(a.shape.begin(), a.shape.end(), want.begin(), want.end())) {
      fail(fmt::format("{} has shape {}, expected {}", name, shape_str(a.shape), shape_str(want)));
    }
    return to_tensor(name, a, want);
  }

  template <std::size_t N>
  Tensor<N> to_tensor(const std::string& name, const NpyArray& a,
                      const std::array<std::size_t, N>& shape) const {
    Tensor<N> out(shape);
    constexpr double kMax = static_cast<double>(std::numeric_limits<float>::max());
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      // A NaN or an infinity would spread through every logit and reach the sampler as a
      // meaningless error: name the tensor and the first bad element instead.
      if (!std::isfinite(a.values[i])) {
        fail(fmt::format("{} holds {} at flat index {}: weights must be finite numbers", name,
                         a.values[i], i));
      }
      if (std::abs(a.values[i]) > kMax) {
        fail(fmt::format("{} holds {} at flat index {}, beyond float32", name, a.values[i], i));
      }
      out.data()[i] = static_cast<float>(a.values[i]);
    }
    return out;
  }

 private:
  fs::path dir_;
};

}  // namespace

LmWeights load_lm(const std::filesystem::path& dir, std::size_t n_layers, std::size_t n_heads,
                  ModelSpec& spec) {
  // The default model (every block pre-norm, LayerNorm, FFN of 4 C, tied head), or the variant
  // its model.txt names.
  ModelChoices asked;
  asked.n_layers = n_layers;
  asked.n_heads = n_heads;
  return load_lm(dir, asked, spec);
}

LmWeights load_lm(const std::filesystem::path& dir, ModelSpec& spec) {
  const ModelChoices asked = spec.choices();
  return load_lm(dir, asked, spec);
}

namespace {

constexpr const char* kModelTxt = "model.txt";

std::string flag_text(bool b) { return b ? "1" : "0"; }

// model.txt, when the folder has one, into `out`: the choices of the lines it has (the others
// keep out's values). `seen` lists the keys it had. Returns false when there is no model.txt.
bool parse_model_txt(const fs::path& dir, ModelChoices& out, std::vector<std::string>& seen,
                     const ModelReader& r) {
  const fs::path path = dir / kModelTxt;
  std::error_code ec;
  seen.clear();
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return false;
  // Each step below can find the file gone: there a moment ago, a newer checkpoint removed this
  // one in between. That is said as such, not as a malformed file.
  const auto vanished = [&] {
    r.fail(std::string(kModelTxt) +
           " vanished while the folder was read (a newer checkpoint replaced it?)");
  };
  if (!fs::is_regular_file(st)) r.fail(std::string(kModelTxt) + " is not a small regular file");
  const std::uintmax_t bytes = fs::file_size(path, ec);
  if (ec) vanished();
  if (bytes > 4096) r.fail(std::string(kModelTxt) + " is not a small regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) vanished();
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<KeyValue> lines;
  try {
    lines = parse_key_values(text.str());
  } catch (const KeyValueError& e) {
    r.fail(fmt::format("{} {}", kModelTxt, e.what()));
  }
  for (const KeyValue& line : lines) {
    const std::size_t number = line.line;
    const std::string &key = line.key, &value = line.value;
    const auto bad = [&](std::string_view want) {
      r.fail(
          fmt::format("{} line {}: {} is '{}', expected {}", kModelTxt, number, key, value, want));
    };
    const auto flag = [&](bool& o) {
      if (value != "0" && value != "1") bad("0 or 1");
      o = value == "1";
    };
    seen.push_back(key);
    // A size is a whole number in [least, 2^20]; any other value (text, -1, one past what
    // size_t holds) is told that range, as check_model_bounds tells a chapter's bound.
    constexpr std::size_t most = std::size_t{1} << 20;
    const auto number_of = [&](std::size_t least) {
      std::size_t n = 0;
      const auto [end, err] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (err != std::errc() || end != value.data() + value.size() || n < least || n > most) {
        bad(fmt::format("a whole number in [{}, {}]", least, most));
      }
      return n;
    };
    const auto size = [&](std::size_t& o) { o = number_of(1); };
    // ffn_hidden and window: 0 (in files written before ModelSpec) means unset.
    const auto optional_size = [&](std::optional<std::size_t>& o) {
      const std::size_t n = number_of(0);
      o = n == 0 ? std::nullopt : std::optional<std::size_t>(n);
    };
    if (key == "n_layers") {
      size(out.n_layers);
    } else if (key == "n_heads") {
      size(out.n_heads);
    } else if (key == "vocab_size") {
      size(out.vocab_size);
    } else if (key == "n_embd") {
      size(out.n_embd);
    } else if (key == "tied_head") {
      flag(out.ablations.tied_head);
    } else if (key == "use_layer_norm") {
      flag(out.ablations.layer_norm);
    } else if (key == "residual") {
      flag(out.ablations.residual);
    } else if (key == "use_ffn") {
      flag(out.ablations.ffn);
    } else if (key == "attn_proj") {
      flag(out.ablations.attn_proj);
    } else if (key == "ffn_hidden") {
      optional_size(out.ffn_hidden);
    } else if (key == "activation") {
      try {
        out.activation = parse_activation(value);
      } catch (const std::invalid_argument&) {
        bad("relu, gelu or gelu_tanh");
      }
    } else if (key == "positions" || key == "normalization" || key == "ffn") {
      // The parts (chapter 11): written only when a model uses one other than the default.
      try {
        if (key == "positions") out.positions = parse_positions(value);
        if (key == "normalization") out.normalization = parse_normalization(value);
        if (key == "ffn") out.ffn = parse_ffn_kind(value);
      } catch (const std::invalid_argument&) {
        bad(choice_names(key));  // the names the spec accepts
      }
    } else if (key == "rope_theta") {
      double theta = 0.0;
      const auto [end, err] = std::from_chars(value.data(), value.data() + value.size(), theta);
      if (err != std::errc() || end != value.data() + value.size() || !std::isfinite(theta) ||
          theta <= 0.0) {
        bad("a number > 0");
      }
      out.rope_theta = theta;
    } else if (key == "n_kv_heads") {
      std::size_t kv = 0;
      size(kv);
      out.n_kv_heads = kv;
    } else if (key == "window") {
      optional_size(out.window);
    } else if (const auto sw = std::ranges::find(part_switches(), key, &PartSwitch::key);
               sw != part_switches().end()) {
      flag(out.*(sw->choice));  // an on/off part: the spec's table of part switches
    } else if (key == "block_size") {
      size(out.block_size);
    } else if (key == "dropout") {
      // Training only: a forward for inference drops nothing, so the value changes no logit.
      float p = -1.0f;
      const auto [end, err] = std::from_chars(value.data(), value.data() + value.size(), p);
      if (err != std::errc() || end != value.data() + value.size() || !(p >= 0.0f && p < 1.0f)) {
        bad("a probability in [0, 1)");
      }
      out.dropout = p;
    } else {
      r.fail(fmt::format("{} line {}: unknown key '{}'", kModelTxt, number, key));
    }
  }
  return true;
}

// model.txt, when the folder has one: its lines replace the choices asked for, except n_layers
// and n_heads, which must agree with them. `seen`: the keys it had.
void read_model_txt(const fs::path& dir, ModelChoices& asked, std::vector<std::string>& seen,
                    const ModelReader& r) {
  ModelChoices file = asked;
  if (!parse_model_txt(dir, file, seen, r)) return;
  for (const bool layers : {true, false}) {
    const std::size_t n = layers ? file.n_layers : file.n_heads;
    const std::size_t given = layers ? asked.n_layers : asked.n_heads;
    if (n != given) {
      const char* key = layers ? "n_layers" : "n_heads";
      r.fail(fmt::format("{} says {} {}, but {} was asked for (pass {} {})", kModelTxt, key, n,
                         given, layers ? "--n-layers" : "--n-heads", n));
    }
  }
  asked = file;
}

constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;
constexpr std::uint64_t kFnvPrime = 1099511628211ull;

// FNV-1a, 64 bits, of a file's bytes (a checksum against torn or swapped files, not a
// cryptographic hash).
std::uint64_t fnv1a64_file(const fs::path& path, std::uintmax_t& size_out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error(
        fmt::format("'{}': cannot open: {}", path.string(), std::strerror(errno)));
  }
  std::uint64_t h = kFnvOffset;
  std::uintmax_t size = 0;
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < got; ++i) {
      h ^= static_cast<unsigned char>(buffer[i]);
      h *= kFnvPrime;
    }
    size += got;
  }
  if (in.bad()) throw std::runtime_error(fmt::format("'{}': cannot read", path.string()));
  size_out = size;
  return h;
}

// The regular files of a folder other than the manifest, sorted; links and others are errors.
std::vector<std::string> folder_files(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const fs::file_status st = e.symlink_status(ec);
    if (fs::is_directory(st) || name == kManifestName) continue;
    if (!fs::exists(st)) {  // listed, then gone: the folder is being replaced
      throw std::runtime_error(fmt::format(
          "'{}': {} vanished while the folder was read (a newer checkpoint replaced it?)",
          dir.string(), name));
    }
    if (!fs::is_regular_file(st)) {
      throw std::runtime_error(fmt::format("'{}': {} is not a regular file", dir.string(), name));
    }
    names.push_back(name);
  }
  if (ec) {
    throw std::runtime_error(fmt::format("'{}': cannot list: {}", dir.string(), ec.message()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Before anything is allocated: the tensor files are links to nothing else and not more than a
// model can hold.
void check_folder_budget(const fs::path& dir, const ModelReader& r) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".npy") continue;
    const fs::file_status st = e.symlink_status(ec);
    const std::string name = e.path().filename().string();
    if (!fs::exists(st)) {
      r.fail(name + " vanished while the folder was read (a newer checkpoint replaced it?)");
    }
    if (!fs::is_regular_file(st)) r.fail(name + " is not a regular file (links are not followed)");
    const std::uintmax_t size = e.file_size(ec);
    if (ec) r.fail(fmt::format("{}: cannot read its size: {}", name, ec.message()));
    total += size;
  }
  if (total > kMaxModelFolderBytes) {
    r.fail(fmt::format("its .npy files hold {} bytes together, more than a model may ({} bytes)",
                       total, kMaxModelFolderBytes));
  }
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = kFnvOffset;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnvPrime;
  }
  return h;
}

std::optional<ModelChoices> read_model_file(const std::filesystem::path& dir) {
  const ModelReader r(dir);
  ModelChoices choices;
  std::vector<std::string> seen;
  if (!parse_model_txt(dir, choices, seen, r)) return std::nullopt;
  for (const char* key : {"n_layers", "n_heads"}) {
    if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
      r.fail(fmt::format("{} has no {} line", kModelTxt, key));
    }
  }
  return choices;
}

void write_manifest(const std::filesystem::path& dir) {
  std::string text = "# name size fnv1a64: what this folder held when it was saved\n";
  std::vector<std::string> names = folder_files(dir);
  // The manifest of each sub-folder too (written before this one), so a sub-folder swapped whole,
  // its files and its manifest together, no longer matches its parent's.
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const fs::path sub = e.path().filename() / kManifestName;
    if (e.is_directory(ec) && !e.is_symlink(ec) && fs::is_regular_file(dir / sub, ec)) {
      names.push_back(sub.generic_string());
    }
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::uintmax_t size = 0;
    const std::uint64_t h = fnv1a64_file(dir / name, size);
    text += fmt::format("{} {} {:016x}\n", name, size, h);
  }
  std::ofstream out(dir / kManifestName, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    throw std::runtime_error(fmt::format("'{}': cannot write {}: {}", dir.string(), kManifestName,
                                         std::strerror(errno)));
  }
}

namespace {

// A problem with a manifest, without the folder's name (the caller adds it).
struct ManifestProblem : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool check_manifest(const fs::path& dir) {
  const fs::path path = dir / kManifestName;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return false;
  const auto fail = [&](const std::string& what) { throw ManifestProblem(what); };
  // Each step below can find the file gone: there a moment ago, a newer checkpoint removed this
  // one in between. That is said as such, not as a malformed file.
  const std::string vanished = std::string(kManifestName) +
                               " vanished while the folder was read (a newer checkpoint "
                               "replaced it?)";
  if (!fs::is_regular_file(st)) fail(std::string(kManifestName) + " is not a small regular file");
  const std::uintmax_t bytes = fs::file_size(path, ec);
  if (ec) fail(vanished);
  if (bytes > (1u << 20)) fail(std::string(kManifestName) + " is not a small regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(vanished);
  std::string line;
  std::vector<std::string> listed;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, hex, rest;
    std::uintmax_t size = 0;
    if (!(fields >> name >> size >> hex) || (fields >> rest) || hex.size() != 16) {
      fail(fmt::format("{} line {} is not `name size fnv1a64`", kManifestName, number));
    }
    // A file of the folder ("wte.npy"), or a sub-folder's manifest ("model/MANIFEST.txt").
    const std::size_t slash = name.find('/');
    const std::string folder = slash == std::string::npos ? "" : name.substr(0, slash);
    const bool plain = slash == std::string::npos && name != "." && name != "..";
    const bool sub_manifest = slash != std::string::npos && !folder.empty() && folder != "." &&
                              folder != ".." && name.substr(slash + 1) == kManifestName;
    if (!plain && !sub_manifest) {
      fail(fmt::format("{} line {} is not `name size fnv1a64`", kManifestName, number));
    }
    const fs::file_status entry = fs::symlink_status(dir / name, ec);
    if (!fs::exists(entry)) fail(fmt::format("{} is missing (listed in {})", name, kManifestName));
    if (!fs::is_regular_file(entry)) fail(name + " is not a regular file");
    std::uintmax_t got_size = 0;
    const std::uint64_t got = fnv1a64_file(dir / name, got_size);
    if (got_size != size || fmt::format("{:016x}", got) != hex) {
      fail(
          fmt::format("{} does not match {} ({} bytes, checksum {:016x}; listed: {} bytes, {}): "
                      "the folder was changed or mixed with another after it was saved",
                      name, kManifestName, got_size, got, size, hex));
    }
    listed.push_back(name);
  }
  for (const std::string& name : folder_files(dir)) {
    if (std::find(listed.begin(), listed.end(), name) == listed.end()) {
      fail(fmt::format("{} is not listed in {}: the folder was changed after it was saved", name,
                       kManifestName));
    }
  }
  return true;
}

}  // namespace

bool verify_manifest(const std::filesystem::path& dir) {
  try {
    return check_manifest(dir);
  } catch (const ManifestProblem& e) {
    throw std::runtime_error(fmt::format("'{}': {}", dir.string(), e.what()));
  }
}

LmWeights load_lm(const std::filesystem::path& dir, const ModelChoices& asked, ModelSpec& spec) {
  const std::size_t n_layers = asked.n_layers, n_heads = asked.n_heads;
  ModelReader r(dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) r.fail("no such folder");
  check_folder_budget(dir, r);
  try {
    r.had_manifest = check_manifest(dir);
  } catch (const ManifestProblem& e) {
    r.fail(e.what());
  }
  ModelChoices c = asked;
  std::vector<std::string> seen;
  read_model_txt(dir, c, seen, r);
  const auto in_file = [&](const char* key) {
    return std::find(seen.begin(), seen.end(), key) != seen.end();
  };
  if (n_layers < 1) {
    // No h0.* files: an empty or unrelated folder is said as such (issue 29), not as a model of
    // zero layers.
    std::error_code none;
    const bool wte = fs::exists(dir / "wte.npy", none);
    const bool block = fs::exists(dir / "h0.w_q.npy", none);
    if (!wte && !block) {
      r.fail(
          "holds no model (no wte.npy, no h0.w_q.npy): give a folder written by "
          "07_causal_lm --export, or a chapter-09 run or checkpoint");
    }
    r.fail(block ? "n_layers must be at least 1, got 0"
                 : "holds wte.npy but no block (no h0.w_q.npy): a model has at least one layer");
  }

  // 1. wte (V, C) and wpe (T_max, C) define the sizes; a model.txt that names them must agree.
  const NpyArray wte = r.read("wte.npy");
  if (wte.shape.size() != 2 || wte.shape[0] == 0 || wte.shape[1] == 0) {
    r.fail(fmt::format("wte.npy has shape {}, expected a non-empty (V, C) table",
                       shape_str(wte.shape)));
  }
  const std::size_t V = wte.shape[0], C = wte.shape[1];
  // Learned positions: wpe (T_max, C) gives T_max. Rope: no table; model.txt says block_size.
  const bool learned = c.positions == Positions::learned;
  NpyArray wpe;
  if (learned) {
    wpe = r.read("wpe.npy");
    if (wpe.shape.size() != 2 || wpe.shape[0] == 0 || wpe.shape[1] != C) {
      r.fail(fmt::format("wpe.npy has shape {}, expected (T_max, {}) with C = {} from wte.npy",
                         shape_str(wpe.shape), C, C));
    }
  }
  const std::size_t T_max = learned ? wpe.shape[0] : c.block_size;
  const auto agree = [&](const char* key, std::size_t said, std::size_t found, const char* file) {
    if (in_file(key) && said != found) {
      r.fail(fmt::format("{} says {} {}, but {} has {}", kModelTxt, key, said, file, found));
    }
  };
  agree("vocab_size", c.vocab_size, V, "wte.npy (V, C)");
  agree("n_embd", c.n_embd, C, "wte.npy (V, C)");
  if (learned) agree("block_size", c.block_size, T_max, "wpe.npy (T_max, C)");
  if (n_heads < 1 || C % n_heads != 0) {
    r.fail(fmt::format("n_heads = {} does not divide C = {} (from wte.npy)", n_heads, C));
  }
  c.vocab_size = V;
  c.n_embd = C;
  c.block_size = T_max;
  // Every default and rule of the spec, once: a model.txt whose parts do not fit is named.
  try {
    spec = resolve_spec(c);
  } catch (const SpecError& e) {
    r.fail(fmt::format("{} describes a model that does not fit: {}", kModelTxt, e.what()));
  }
  const ModelSpec& config = spec;
  // The tensors this config has, their shapes (the parameter table, params.hpp).
  const ParamDims dims = param_dims(config);

  LmWeights w;
  w.wte = r.to_tensor<2>("wte.npy", wte, {V, C});
  if (learned) w.wpe = r.to_tensor<2>("wpe.npy", wpe, {T_max, C});

  // 2. Every other tensor the table lists, in its order; the first problem is reported. A
  //    variant's unused tensors are not read (and not saved by save_lm).
  w.blocks.resize(n_layers);
  visit_params(w, w, &dims, [&](const ParamRow& row, auto& t, auto&) {
    if (!row.present || t.size() != 0) return;  // absent, or wte and wpe (read above)
    const std::string file = param_name(row) + ".npy";
    if constexpr (std::tuple_size_v<typename std::decay_t<decltype(t)>::shape_type> == 2) {
      t = r.load<2>(file, {row.shape[0], row.shape[1]});
    } else {
      t = r.load<1>(file, {row.shape[0]});
    }
  });

  return w;
}

void save_lm(const std::filesystem::path& dir, const LmWeights& w) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("model '{}': cannot create the folder: {}", dir.string(), ec.message()));
  }
  // Every tensor of the parameter table, in its order; a variant's empty tensors are skipped
  // (load_lm with its ModelSpec does not read them).
  visit_params(w, w, nullptr, [&](const ParamRow& row, const auto& t, const auto&) {
    if (t.size() != 0) save_npy(dir / (param_name(row) + ".npy"), t);
  });
}

void save_lm(const std::filesystem::path& dir, const LmWeights& w, const ModelSpec& spec) {
  save_lm(dir, w);
  std::ofstream out(dir / kModelTxt);
  out << model_txt(spec);
  out.close();
  if (!out) {
    throw std::runtime_error(fmt::format("model '{}': cannot write {}", dir.string(), kModelTxt));
  }
}

std::string model_txt(const ModelSpec& s) {
  const Ablations& a = s.ablations;
  std::string text = "# the model this folder holds (attn::save_lm), every choice resolved\n";
  const auto line = [&](std::string_view key, const auto& value) {
    text += fmt::format("{} {}\n", key, value);
  };
  line("vocab_size", s.vocab_size);
  line("block_size", s.block_size);
  line("n_embd", s.n_embd);
  line("n_heads", s.n_heads);
  line("n_layers", s.n_layers);
  line("tied_head", flag_text(a.tied_head));
  line("use_layer_norm", flag_text(a.layer_norm));
  line("residual", flag_text(a.residual));
  line("use_ffn", flag_text(a.ffn));
  line("attn_proj", flag_text(a.attn_proj));
  line("ffn_hidden", s.ffn_hidden);
  line("activation", activation_name(s.activation));
  line("dropout", fmt::format("{:.9g}", s.dropout));
  line("positions", positions_name(s.positions));
  line("rope_theta", fmt::format("{:.17g}", s.rope_theta));
  line("normalization", normalization_name(s.normalization));
  line("ffn", ffn_kind_name(s.ffn));
  line("n_kv_heads", s.n_kv_heads);
  if (s.window) line("window", *s.window);  // absent: no window
  // The on/off parts, the spec's table of part switches; a later one only when on.
  for (const PartSwitch& sw : part_switches()) {
    const bool on = s.choices().*(sw.choice);
    if (on || sw.written_off) line(sw.key, flag_text(on));
  }
  return text;
}

fs::path resolve_model_folder(const fs::path& given) {
  std::error_code ec;
  // A run whose `current` (or `model`) link points to a checkpoint that is gone: said as such,
  // not as an empty folder with no blocks ("n_layers must be at least 1").
  for (const fs::path& link : {given, given / "current", given / "model"}) {
    if (fs::is_symlink(fs::symlink_status(link, ec)) && !fs::exists(link, ec)) {
      throw std::runtime_error(fmt::format(
          "--weights '{}': the link '{}' points to '{}', which is gone (a checkpoint removed by "
          "hand, or the run's folder copied without it): use a run or checkpoint that is whole",
          given.string(), link.string(), fs::read_symlink(link, ec).string()));
    }
  }
  fs::path folder = given;
  if (fs::is_directory(given / "model", ec) && !fs::exists(given / "wte.npy", ec)) {
    folder = given / "model";  // a chapter-09 run (DIR/model) or checkpoint (DIR/ckpt-N/model)
  }
  if (!fs::exists(fs::symlink_status(folder, ec))) {
    throw std::runtime_error(
        fmt::format("--weights: '{}' does not exist (expected a model folder)", given.string()));
  }
  if (!fs::is_directory(folder, ec)) {
    throw std::runtime_error(fmt::format("--weights: '{}' is not a folder", given.string()));
  }
  fs::path dir = fs::canonical(folder, ec);
  if (ec) throw std::runtime_error(fmt::format("--weights '{}': {}", given.string(), ec.message()));
  // The model folder of a chapter-09 checkpoint (its parent holds train.txt and a manifest)
  // always has its own manifest: without it, swapped or replaced tensors would load unnoticed.
  const fs::path parent = dir.parent_path();
  if (fs::exists(parent / "train.txt", ec) && fs::exists(parent / kManifestName, ec) &&
      !fs::exists(fs::symlink_status(dir / kManifestName, ec))) {
    throw std::runtime_error(
        fmt::format("model '{}': {} is missing, and every folder of a checkpoint has one (was "
                    "the folder edited? use a checkpoint that has it)",
                    dir.string(), kManifestName));
  }
  return dir;
}

std::size_t count_blocks(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  while (fs::exists(dir / fmt::format("h{}.w_q.npy", n), ec)) ++n;
  return n;
}

}  // namespace attn
