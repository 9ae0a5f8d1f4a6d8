// Heatmaps of attention weights: in the terminal, and as SVG figures for the docs
// (attn/term/plot.hpp). Chapters 02 onward draw their (T, T) weight matrices here. Both outputs are
// deterministic: numbers go through fmt with fixed precision, there are no timestamps and no random
// ids.
#include "attn/term/plot.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "attn/core/check.hpp"
#include "attn/term/print.hpp"

namespace attn {
namespace {

constexpr std::string_view kRamp = " .:-=+*#%@";  // plain mode, from low to high

// ---------------------------------------------------------------------------------------------
// Shared by both outputs: the colour scale and label handling.

struct Scale {
  float lo = 0.0f;
  float hi = 1.0f;
  bool has_nan = false;
  bool has_neg_inf = false;
};

// vmin/vmax default to the finite min/max; NaN and +-inf never stretch the scale.
Scale scale_of(const Matrix& m, const HeatmapOptions& options) {
  Scale s;
  bool any_finite = false;
  float lo = 0.0f;
  float hi = 0.0f;
  for (float v : m) {
    if (std::isnan(v)) {
      s.has_nan = true;
    } else if (std::isinf(v)) {
      if (v < 0) s.has_neg_inf = true;
    } else if (!any_finite) {
      lo = hi = v;
      any_finite = true;
    } else {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (any_finite) {
    s.lo = lo;
    s.hi = hi;
  }
  if (options.vmin) s.lo = *options.vmin;
  if (options.vmax) s.hi = *options.vmax;
  return s;
}

// Where `v` sits on the scale, in [0, 1]. A flat scale (every value equal) puts it mid-way.
double position(float v, const Scale& s) {
  if (std::isinf(v)) return v > 0 ? 1.0 : 0.0;
  const double lo = static_cast<double>(s.lo);
  const double hi = static_cast<double>(s.hi);
  if (!(hi > lo)) return 0.5;
  return std::clamp((static_cast<double>(v) - lo) / (hi - lo), 0.0, 1.0);
}

// Labels are printed as given, except control characters, which would break a line (or an XML
// document): the caller should pass printable names such as "\\n".
std::string sanitize(std::string_view label) {
  std::string out;
  for (char c : label) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  return out;
}

// Splits a UTF-8 label into its characters (code points), for terminal columns.
std::vector<std::string> characters(std::string_view text) {
  std::vector<std::string> out;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0u) == 0x80u && !out.empty()) {
      out.back() += c;
    } else {
      out.emplace_back(1, c);
    }
  }
  return out;
}

void check_labels(const Matrix& m, const HeatmapOptions& options, std::string_view function) {
  require(options.row_labels.empty() || options.row_labels.size() == m.shape(0), function, [&] {
    return fmt::format("expected {} row labels, got {}", m.shape(0), options.row_labels.size());
  });
  require(options.col_labels.empty() || options.col_labels.size() == m.shape(1), function, [&] {
    return fmt::format("expected {} column labels, got {}", m.shape(1), options.col_labels.size());
  });
}

// ---------------------------------------------------------------------------------------------
// Terminal.

// Dark navy to white through blue and cyan, from the xterm 256-colour cube: low weights stay
// close to a dark terminal's background, high weights stand out.
constexpr std::array<int, 16> kTermColors = {16, 17, 18, 19, 20,  21,  27,  33,
                                             39, 45, 51, 87, 123, 159, 195, 231};

constexpr std::string_view kReset = "\x1b[0m";

std::string colored_cell(float v, const Scale& s) {
  if (std::isnan(v)) return fmt::format("{}??", kReset);
  if (std::isinf(v) && v < 0) return fmt::format("{}  ", kReset);
  const auto last = static_cast<double>(kTermColors.size() - 1);
  const auto index = static_cast<std::size_t>(std::lround(position(v, s) * last));
  return fmt::format("\x1b[48;5;{}m  ", kTermColors[index]);
}

char plain_cell(float v, const Scale& s) {
  if (std::isnan(v)) return '?';
  if (std::isinf(v) && v < 0) return ' ';
  // Ten equal bins: [0, 0.1) -> ' ', ..., [0.9, 1] -> '@'.
  const auto bin = static_cast<std::size_t>(position(v, s) * static_cast<double>(kRamp.size()));
  return kRamp[std::min(bin, kRamp.size() - 1)];
}

// ---------------------------------------------------------------------------------------------
// SVG.

struct Rgb {
  int r, g, b;
};

// The "Blues" colour map (ColorBrewer, as in matplotlib), from near-white to dark blue.
constexpr std::array<Rgb, 9> kBlues = {{{247, 251, 255},
                                        {222, 235, 247},
                                        {198, 219, 239},
                                        {158, 202, 225},
                                        {107, 174, 214},
                                        {66, 146, 198},
                                        {33, 113, 181},
                                        {8, 81, 156},
                                        {8, 48, 107}}};

// "RdBu" reversed (ColorBrewer): dark blue for low values, near-white in the middle, dark red for
// high ones. For signed quantities centred on 0, such as sines and cosines.
constexpr std::array<Rgb, 11> kBlueRed = {{{5, 48, 97},
                                           {33, 102, 172},
                                           {67, 147, 195},
                                           {146, 197, 222},
                                           {209, 229, 240},
                                           {247, 247, 247},
                                           {253, 219, 199},
                                           {244, 165, 130},
                                           {214, 96, 77},
                                           {178, 24, 43},
                                           {103, 0, 31}}};

template <std::size_t N>
Rgb interpolate(const std::array<Rgb, N>& map, double t) {
  const double x = t * static_cast<double>(N - 1);
  const auto i = std::min(static_cast<std::size_t>(x), N - 2);
  const double f = x - static_cast<double>(i);
  auto mix = [f](int a, int b) {
    return static_cast<int>(std::lround(static_cast<double>(a) + f * static_cast<double>(b - a)));
  };
  return {mix(map[i].r, map[i + 1].r), mix(map[i].g, map[i + 1].g), mix(map[i].b, map[i + 1].b)};
}

// The fill of a cell at position t in [0, 1] of the scale.
Rgb fill_of(double t, bool diverging) {
  return diverging ? interpolate(kBlueRed, t) : interpolate(kBlues, t);
}

std::string hex(Rgb c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

// Dark fills get white text.
bool is_dark(Rgb c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b < 140.0; }

constexpr std::string_view kNegInfFill = "#ececec";
constexpr std::string_view kNanFill = "#9e9e9e";
constexpr std::string_view kSans = "DejaVu Sans, Helvetica, Arial, sans-serif";
constexpr std::string_view kMono = "DejaVu Sans Mono, Menlo, Consolas, monospace";

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : sanitize(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Approximate rendered width of `text` at `font_size`: good enough to lay out margins.
int text_width(std::string_view text, int font_size) {
  const auto chars = static_cast<double>(characters(text).size());
  return static_cast<int>(std::ceil(chars * 0.62 * static_cast<double>(font_size)));
}

// The start of every figure: the <svg> element of width x height, its <title> (screen readers
// and tooltips show it), `defs` (arrow markers, or nothing), a white background, and the title
// in bold at (x, x + title_font) when there is one.
std::string svg_start(int width, int height, std::string_view title, int x, int title_font,
                      std::string_view defs = {}) {
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"{2}\">\n",
      width, height, kSans);
  if (!title.empty()) out += fmt::format("<title>{}</title>\n", xml_escape(title));
  out += defs;
  out += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", width, height);
  if (!title.empty()) {
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\" "
        "fill=\"#222222\">{}</text>\n",
        x, x + title_font, title_font, xml_escape(title));
  }
  return out;
}

}  // namespace

bool use_color(std::FILE* stream) {
  if (stream == nullptr) return false;
  const int fd = fileno(stream);
  if (fd < 0 || isatty(fd) == 0) return false;
  const char* no_color = std::getenv("NO_COLOR");
  return no_color == nullptr || no_color[0] == '\0';
}

std::string heatmap_text(const Matrix& m, const HeatmapOptions& options, bool color) {
  check_labels(m, options, "attn::heatmap_text");
  const std::size_t rows = m.shape(0);
  const std::size_t cols = m.shape(1);
  const Scale s = scale_of(m, options);

  std::string out;
  if (!options.title.empty()) out += sanitize(options.title) + '\n';
  if (rows == 0 || cols == 0) return out + "  (empty)\n";

  // Row labels, left-aligned in their own column.
  std::vector<std::vector<std::string>> row_chars;
  std::size_t label_width = 0;
  for (const std::string& label : options.row_labels) {
    row_chars.push_back(characters(sanitize(label)));
    label_width = std::max(label_width, row_chars.back().size());
  }
  auto prefix = [&](std::size_t i) {
    std::string p = "  ";
    if (label_width == 0) return p;
    for (const std::string& c : row_chars[i]) p += c;
    return p + std::string(label_width - row_chars[i].size() + 1, ' ');
  };
  const std::size_t map_indent = 2 + (label_width > 0 ? label_width + 1 : 0);

  // Column labels above their cells. Each cell is two columns wide (a character and a space in
  // plain mode, two coloured spaces in colour mode). A label wider than that is written
  // vertically, one character per line, ending just above its column.
  if (!options.col_labels.empty()) {
    std::vector<std::vector<std::string>> col_chars;
    std::size_t height = 1;
    bool fits = true;
    for (const std::string& label : options.col_labels) {
      col_chars.push_back(characters(sanitize(label)));
      height = std::max(height, col_chars.back().size());
      fits = fits && col_chars.back().size() <= 1;
    }
    if (fits) height = 1;
    const std::size_t first = map_indent + (color ? 0 : 1);  // plain rows open with '|'
    for (std::size_t k = 0; k < height; ++k) {
      std::string line(first, ' ');
      for (std::size_t j = 0; j < cols; ++j) {
        const std::vector<std::string>& c = col_chars[j];
        const std::size_t skip = height - c.size();  // bottom-align the vertical labels
        line += (k >= skip && !c.empty()) ? c[k - skip] : std::string(" ");
        line += ' ';
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + '\n';
    }
  }

  // The map, one line per row.
  for (std::size_t i = 0; i < rows; ++i) {
    std::string line = prefix(i);  // map_indent columns
    if (color) {
      for (std::size_t j = 0; j < cols; ++j) line += colored_cell(m(i, j), s);
      line += kReset;
    } else {
      line += '|';
      for (std::size_t j = 0; j < cols; ++j) {
        if (j > 0) line += ' ';
        line += plain_cell(m(i, j), s);
      }
      line += '|';
    }
    out += line + '\n';
  }

  // The legend.
  const std::string lo = format_number(s.lo, options.precision);
  const std::string hi = format_number(s.hi, options.precision);
  if (color) {
    std::string bar;
    for (int c : kTermColors) bar += fmt::format("\x1b[48;5;{}m ", c);
    out += fmt::format("  scale: {} {}{} {}", lo, bar, kReset, hi);
    if (s.has_neg_inf) out += "; blank = -inf";
    if (s.has_nan) out += "; ?? = NaN";
  } else {
    out += fmt::format("  scale: '{}' = {} ... '{}' = {}", kRamp.front(), lo, kRamp.back(), hi);
    if (s.has_neg_inf) out += "; ' ' = -inf";
    if (s.has_nan) out += "; '?' = NaN";
  }
  return out + '\n';
}

std::string heatmap_svg(const Matrix& m, const HeatmapOptions& options) {
  check_labels(m, options, "attn::heatmap_svg");
  const auto rows = static_cast<int>(m.shape(0));
  const auto cols = static_cast<int>(m.shape(1));
  const Scale s = scale_of(m, options);

  // 1. Sizes. Cells are square: 32 px up to 16x16, smaller for bigger maps (a 65x65 bigram table
  //    is 8 px per cell, 520 px wide), so a figure stays readable in a README.
  const int n = std::max({rows, cols, 1});
  const int cell = n <= 16 ? 32 : std::clamp(512 / n, 8, 32);
  const int label_font = std::clamp(cell - 4, 7, 13);
  const int value_font = std::clamp(cell * 10 / 32, 6, 10);
  const int title_font = 15;
  const int pad = 12;

  std::vector<std::string> values;  // annotations, empty where nothing fits
  values.reserve(static_cast<std::size_t>(rows * cols));
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const float v = m(static_cast<std::size_t>(i), static_cast<std::size_t>(j));
      std::string text;
      if (std::isnan(v)) {
        text = "NaN";  // always, so a NaN cell is never mistaken for data
      } else if (options.annotate) {
        text = format_number(v, options.precision);
      }
      if (!text.empty() && (cell < 16 || text_width(text, value_font) > cell - 4)) text.clear();
      values.push_back(std::move(text));
    }
  }

  int row_label_w = 0;
  for (const std::string& label : options.row_labels) {
    row_label_w = std::max(row_label_w, text_width(label, label_font));
  }
  int col_label_w = 0;  // the longest column label, horizontal
  for (const std::string& label : options.col_labels) {
    col_label_w = std::max(col_label_w, text_width(label, label_font));
  }
  const bool rotate_cols = col_label_w > cell - 2;  // too wide: write them upwards
  const int col_band = options.col_labels.empty() ? 0
                       : rotate_cols              ? col_label_w + 8
                                                  : label_font + 8;

  const int title_h = options.title.empty() ? 0 : title_font + 14;
  const int axis_font = 12;  // the axis names, x under the map and y upwards on its left
  const int y_axis_w = options.y_label.empty() ? 0 : axis_font + 8;
  const int x_axis_h = options.x_label.empty() ? 0 : axis_font + 12;
  const int grid_x = pad + y_axis_w + (row_label_w > 0 ? row_label_w + 8 : 0);
  const int grid_y = pad + title_h + col_band;
  const int grid_w = cols * cell;
  const int grid_h = rows * cell;

  // The legend: a vertical bar of ten steps right of the grid, then the special cells.
  const std::string lo = format_number(s.lo, options.precision);
  const std::string hi = format_number(s.hi, options.precision);
  const int legend_font = 11;
  const int bar_x = grid_x + grid_w + 16;
  const int bar_w = 12;
  const int steps = 10;
  const int step_h = std::clamp(grid_h / steps, 6, 16);
  const int bar_h = steps * step_h;
  const int tick_w = std::max({text_width(lo, legend_font), text_width(hi, legend_font),
                               s.has_nan ? text_width("NaN", legend_font) : 0,
                               s.has_neg_inf ? text_width("-inf", legend_font) : 0});
  const int legend_right = bar_x + bar_w + 6 + tick_w;
  const int specials = (s.has_nan ? 1 : 0) + (s.has_neg_inf ? 1 : 0);
  const int legend_bottom = grid_y + bar_h + specials * (step_h + 8 + 4);

  const int x_label_right = grid_x + grid_w / 2 + text_width(options.x_label, axis_font) / 2;
  const int width =
      std::max({legend_right, x_label_right, pad + text_width(options.title, title_font)}) + pad;
  const int height = std::max(grid_y + grid_h + x_axis_h, legend_bottom) + pad;

  // 2. The document.
  std::string out = svg_start(width, height, options.title, pad, title_font);

  // The axis names: what a column is, under the map; what a row is, upwards on its left.
  if (!options.x_label.empty()) {
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#333333\" "
        "text-anchor=\"middle\">{}</text>\n",
        grid_x + grid_w / 2, grid_y + grid_h + x_axis_h, axis_font, xml_escape(options.x_label));
  }
  if (!options.y_label.empty()) {
    const int x = pad + axis_font;
    const int y = grid_y + grid_h / 2;
    out += fmt::format(
        "<text x=\"{0}\" y=\"{1}\" font-size=\"{2}\" fill=\"#333333\" text-anchor=\"middle\" "
        "transform=\"rotate(-90 {0} {1})\">{3}</text>\n",
        x, y, axis_font, xml_escape(options.y_label));
  }

  // Column labels, centred over their column (or written upwards when they are long).
  if (!options.col_labels.empty()) {
    out += fmt::format("<g font-family=\"{}\" font-size=\"{}\" fill=\"#333333\"{}>\n", kMono,
                       label_font, rotate_cols ? "" : " text-anchor=\"middle\"");
    for (int j = 0; j < cols; ++j) {
      const std::string label = xml_escape(options.col_labels[static_cast<std::size_t>(j)]);
      const int cx = grid_x + j * cell + cell / 2;
      if (rotate_cols) {
        const int x = cx + label_font / 3;
        const int y = grid_y - 6;
        out +=
            fmt::format("<text x=\"{0}\" y=\"{1}\" transform=\"rotate(-90 {0} {1})\">{2}</text>\n",
                        x, y, label);
      } else {
        out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", cx, grid_y - 7, label);
      }
    }
    out += "</g>\n";
  }

  // Row labels, right-aligned left of their row.
  if (!options.row_labels.empty()) {
    out += fmt::format(
        "<g font-family=\"{}\" font-size=\"{}\" fill=\"#333333\" text-anchor=\"end\">\n", kMono,
        label_font);
    for (int i = 0; i < rows; ++i) {
      out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", grid_x - 6,
                         grid_y + i * cell + cell / 2 + label_font * 7 / 20,
                         xml_escape(options.row_labels[static_cast<std::size_t>(i)]));
    }
    out += "</g>\n";
  }

  // The cells, then their values on top.
  out += "<g>\n";
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const float v = m(static_cast<std::size_t>(i), static_cast<std::size_t>(j));
      std::string fill;
      if (std::isnan(v)) {
        fill = kNanFill;
      } else if (std::isinf(v) && v < 0) {
        fill = kNegInfFill;
      } else {
        fill = hex(fill_of(position(v, s), options.diverging));
      }
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n",
                         grid_x + j * cell, grid_y + i * cell, cell, cell, fill);
    }
  }
  out += "</g>\n";
  if (std::any_of(values.begin(), values.end(), [](const std::string& v) { return !v.empty(); })) {
    out += fmt::format("<g font-size=\"{}\" text-anchor=\"middle\">\n", value_font);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < cols; ++j) {
        const std::string& text = values[static_cast<std::size_t>(i * cols + j)];
        if (text.empty()) continue;
        const float v = m(static_cast<std::size_t>(i), static_cast<std::size_t>(j));
        const bool white =
            !std::isnan(v) && !std::isinf(v) && is_dark(fill_of(position(v, s), options.diverging));
        const std::string_view ink = white                    ? "#ffffff"
                                     : std::isinf(v) && v < 0 ? "#888888"
                                                              : "#222222";
        out += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n",
                           grid_x + j * cell + cell / 2,
                           grid_y + i * cell + cell / 2 + value_font * 7 / 20, ink, text);
      }
    }
    out += "</g>\n";
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888888\" "
      "stroke-width=\"1\"/>\n",
      grid_x, grid_y, grid_w, grid_h);

  // The legend: high values on top, like a y axis.
  out += fmt::format("<g font-size=\"{}\" fill=\"#333333\">\n", legend_font);
  for (int k = 0; k < steps; ++k) {
    const double t = (static_cast<double>(steps - 1 - k) + 0.5) / static_cast<double>(steps);
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", bar_x,
                       grid_y + k * step_h, bar_w, step_h, hex(fill_of(t, options.diverging)));
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888888\"/>\n",
      bar_x, grid_y, bar_w, bar_h);
  const int tick_x = bar_x + bar_w + 6;
  out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", tick_x, grid_y + legend_font - 1, hi);
  out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", tick_x, grid_y + bar_h, lo);
  int y = grid_y + bar_h + 8;
  auto special = [&](std::string_view fill, std::string_view name) {
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#888888\"/>\n",
        bar_x, y, bar_w, step_h + 4, fill);
    out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", tick_x,
                       y + (step_h + 4) / 2 + legend_font * 7 / 20, name);
    y += step_h + 8 + 4;
  };
  if (s.has_neg_inf) special(kNegInfFill, "-inf");
  if (s.has_nan) special(kNanFill, "NaN");
  out += "</g>\n";
  return out + "</svg>\n";
}

namespace {

// ---------------------------------------------------------------------------------------------
// Line charts.

// Colour-blind-safe palette (Okabe-Ito), one colour per series in a fixed order.
constexpr std::array<std::string_view, 8> kLineColors = {
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442"};

constexpr std::string_view kChart = "attn::line_chart_svg";

// Up to about `target` round tick values (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target) {
  const double raw = (hi - lo) / static_cast<double>(std::max(target, 1));
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

// A tick label: integers as integers, very large or very small values as 1.5e+06, else the
// fewest decimals that show the step between ticks.
std::string tick_text(double v, double step) {
  if (v != 0.0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-4)) return fmt::format("{:g}", v);
  if (std::abs(v - std::round(v)) < 1e-9) {
    return fmt::format("{}", static_cast<long long>(std::llround(v)));
  }
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 1, 6);
  return fmt::format("{:.{}f}", v, decimals);
}

// 10^e as text: "1", "10", "0.01" for |e| <= 3, else "1e-05".
std::string decade_text(int e) {
  if (e >= 0 && e <= 3)
    return fmt::format("{}", static_cast<long long>(std::llround(std::pow(10.0, e))));
  if (e < 0 && e >= -3) return fmt::format("{:.{}f}", std::pow(10.0, e), -e);
  return fmt::format("1e{:+03d}", e);
}

// One axis, in axis units (log10 of the value on a log axis): its range and labelled ticks.
struct Axis {
  double lo = 0.0;
  double hi = 1.0;
  std::vector<double> ticks;
  std::vector<std::string> labels;
};

// Ticks for [lo, hi] (axis units): about `target` round numbers on a linear axis; on a log axis
// the powers of ten, at most about 8 of them labelled (every second decade, or third...). A log
// range inside one decade gets round numbers instead, placed on the log scale.
void auto_ticks(Axis& a, bool log, int target) {
  if (log) {
    const int first = static_cast<int>(std::ceil(a.lo - 1e-9));
    const int last = static_cast<int>(std::floor(a.hi + 1e-9));
    const int every = std::max(1, (last - first + 7) / 8);
    for (int e = first; e <= last; e += every) {
      a.ticks.push_back(static_cast<double>(e));
      a.labels.push_back(decade_text(e));
    }
    if (a.ticks.size() >= 2) return;
    a.ticks.clear();
    a.labels.clear();
    const std::vector<double> values =
        nice_ticks(std::pow(10.0, a.lo), std::pow(10.0, a.hi), target);
    const double step = values.size() > 1 ? values[1] - values[0] : 1.0;
    for (const double v : values) {
      if (!(v > 0.0)) continue;
      a.ticks.push_back(std::log10(v));
      a.labels.push_back(tick_text(v, step));
    }
    return;
  }
  a.ticks = nice_ticks(a.lo, a.hi, target);
  const double step = a.ticks.size() > 1 ? a.ticks[1] - a.ticks[0] : 1.0;
  for (const double t : a.ticks) a.labels.push_back(tick_text(t, step));
}

// Every check of line_chart_svg's input, before anything is drawn.
void check_chart(const std::vector<Series>& series, const LineChartOptions& o) {
  require(!series.empty(), kChart, "no series to draw; expected at least one");
  require(o.width >= 100 && o.height >= 100, kChart, [&] {
    return fmt::format(
        "a plotting area of {} x {} pixels is too small; expected at least 100 x 100", o.width,
        o.height);
  });
  for (const Series& s : series) {
    require(s.x.size() == s.y.size(), kChart, [&] {
      return fmt::format("series '{}' has {} x values and {} y values; expected as many of each",
                         s.name, s.x.size(), s.y.size());
    });
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      require(std::isfinite(s.x[i]), kChart, [&] {
        return fmt::format("series '{}' has x[{}] = {}; expected finite x values", s.name, i,
                           s.x[i]);
      });
    }
  }
  for (const double t : o.x_ticks) {
    require(std::isfinite(t) && (!o.log_x || t > 0.0), kChart, [&] {
      return fmt::format("x tick {} cannot be drawn; expected finite ticks{}", t,
                         o.log_x ? ", > 0 on a log axis" : "");
    });
  }
  for (const std::optional<double>& limit : {o.y_min, o.y_max}) {
    require(!limit || (std::isfinite(*limit) && (!o.log_y || *limit > 0.0)), kChart, [&] {
      return fmt::format("y limit {} cannot be drawn; expected a finite value{}",
                         limit.value_or(0.0), o.log_y ? ", > 0 on a log axis" : "");
    });
  }
  require(!o.y_min || !o.y_max || *o.y_min < *o.y_max, kChart, [&] {
    return fmt::format("y_min {} is not below y_max {}; expected y_min < y_max",
                       o.y_min.value_or(0.0), o.y_max.value_or(0.0));
  });
}

}  // namespace

std::string line_chart_svg(const std::vector<Series>& series, const LineChartOptions& options) {
  check_chart(series, options);
  const auto drawable = [&](double x, double y) {
    return std::isfinite(y) && (!options.log_y || y > 0.0) && (!options.log_x || x > 0.0);
  };
  const auto tx = [&](double x) { return options.log_x ? std::log10(x) : x; };
  const auto ty = [&](double y) { return options.log_y ? std::log10(y) : y; };

  // 1. The data range, in axis units.
  Axis xa, ya;
  bool any = false;
  for (const Series& s : series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s.x[i], s.y[i])) continue;
      const double x = tx(s.x[i]);
      const double y = ty(s.y[i]);
      if (!any) {
        xa.lo = xa.hi = x;
        ya.lo = ya.hi = y;
        any = true;
      }
      xa.lo = std::min(xa.lo, x);
      xa.hi = std::max(xa.hi, x);
      ya.lo = std::min(ya.lo, y);
      ya.hi = std::max(ya.hi, y);
    }
  }
  require(any, kChart,
          "no point to draw (every y is non-finite, or every point is <= 0 on a log axis); "
          "expected at least one drawable point");

  // 2. The axes. x: exactly the data (widened to the given ticks); y: a little margin, or whole
  //    decades on a log axis, unless y_min / y_max say otherwise.
  if (!(xa.hi > xa.lo)) {
    xa.lo -= 1.0;
    xa.hi += 1.0;
  }
  if (options.x_ticks.empty()) {
    if (options.log_x) {
      xa.lo = std::floor(xa.lo);
      xa.hi = std::ceil(xa.hi);
    }
    auto_ticks(xa, options.log_x, 8);
  } else {
    for (const double t : options.x_ticks) {
      xa.ticks.push_back(tx(t));
      xa.labels.push_back(fmt::format("{:g}", t));
      xa.lo = std::min(xa.lo, xa.ticks.back());
      xa.hi = std::max(xa.hi, xa.ticks.back());
    }
  }
  if (options.y_min) ya.lo = ty(*options.y_min);
  if (options.y_max) ya.hi = ty(*options.y_max);
  if (!(ya.hi > ya.lo)) {  // one value: centre it (a given limit stays put)
    if (options.y_min) {
      ya.hi = ya.lo + 1.0;
    } else if (options.y_max) {
      ya.lo = ya.hi - 1.0;
    } else {
      ya.lo -= 1.0;
      ya.hi += 1.0;
    }
  }
  if (options.log_y) {
    if (!options.y_min) ya.lo = std::floor(ya.lo);
    if (!options.y_max) ya.hi = std::ceil(ya.hi);
  } else {
    const double margin = 0.05 * (ya.hi - ya.lo);
    if (!options.y_min) ya.lo -= margin;
    if (!options.y_max) ya.hi += margin;
  }
  auto_ticks(ya, options.log_y, 6);

  // 3. The layout: tick labels left of the plotting area, the y label above it, the x label
  //    under it; the legend right of it or inside a top corner.
  const int font = 12;
  const int title_font = 15;
  const int pad = 12;
  const int row = font + 10;  // one legend entry
  int y_label_w = 0;
  for (const std::string& t : ya.labels) y_label_w = std::max(y_label_w, text_width(t, font));
  int legend_w = 0;
  for (const Series& s : series) legend_w = std::max(legend_w, text_width(s.name, font));
  legend_w += 34;
  const int title_h = options.title.empty() ? 0 : title_font + 14;
  const int y_name_h = options.y_label.empty() ? 0 : font + 8;
  const int plot_x = pad + y_label_w + 8;
  const int plot_y = pad + title_h + y_name_h;
  const int plot_w = options.width;
  const int plot_h = options.height;
  using Legend = LineChartOptions::Legend;
  const bool outside = options.legend == Legend::outside;
  const int legend_x = outside                              ? plot_x + plot_w + 16
                       : options.legend == Legend::top_left ? plot_x + 18
                                                            : plot_x + plot_w - 14 - legend_w;
  const int legend_y = outside ? plot_y + 8 : plot_y + 25;  // the first entry's centre
  const auto px = [&](double x) {
    return static_cast<double>(plot_x) +
           (x - xa.lo) / (xa.hi - xa.lo) * static_cast<double>(plot_w);
  };
  int right = outside ? legend_x + legend_w : plot_x + plot_w;
  for (std::size_t i = 0; i < xa.ticks.size(); ++i) {  // a label centred on the right edge
    right = std::max(
        right, static_cast<int>(std::ceil(px(xa.ticks[i]))) + text_width(xa.labels[i], font) / 2);
  }
  const int width = std::max(right, pad + text_width(options.title, title_font)) + pad;
  const int height = plot_y + plot_h + font + 10 + (options.x_label.empty() ? 0 : font + 10) + pad;
  const auto py = [&](double y) {
    return static_cast<double>(plot_y + plot_h) -
           (y - ya.lo) / (ya.hi - ya.lo) * static_cast<double>(plot_h);
  };

  // 4. The frame: grid lines, tick labels, axis labels.
  std::string out = svg_start(width, height, options.title, pad, title_font);
  out += fmt::format("<g font-size=\"{}\" fill=\"#333333\">\n", font);
  for (std::size_t i = 0; i < ya.ticks.size(); ++i) {
    const double y = py(ya.ticks[i]);
    out +=
        fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e0e0e0\"/>\n",
                    plot_x, y, plot_x + plot_w, y);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", plot_x - 6,
                       y + font * 0.35, ya.labels[i]);
  }
  for (std::size_t i = 0; i < xa.ticks.size(); ++i) {
    const double x = px(xa.ticks[i]);
    out +=
        fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#e0e0e0\"/>\n",
                    x, plot_y, x, plot_y + plot_h);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x,
                       plot_y + plot_h + font + 4, xa.labels[i]);
  }
  if (!options.y_label.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", pad, plot_y - 8,
                       xml_escape(options.y_label));
  }
  if (!options.x_label.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       plot_x + plot_w / 2, plot_y + plot_h + 2 * font + 12,
                       xml_escape(options.x_label));
  }
  out += "</g>\n";
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888888\"/>\n",
      plot_x, plot_y, plot_w, plot_h);

  // 5. The series: one polyline per unbroken run of drawable points, dots where asked (and on a
  //    point that is a run by itself, which no line would show). Clipped to the plotting area
  //    when y_min / y_max may cut the data.
  const bool clip = options.y_min || options.y_max;
  if (clip) {
    out += fmt::format(
        "<clipPath id=\"plot\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>"
        "</clipPath>\n<g clip-path=\"url(#plot)\">\n",
        plot_x, plot_y, plot_w, plot_h);
  }
  const std::string_view dash = " stroke-dasharray=\"6 4\"";
  for (std::size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const bool dots = s.dots.value_or(options.dots);
    out += fmt::format("<g stroke=\"{0}\" fill=\"{0}\">\n", kLineColors[k % kLineColors.size()]);
    std::string run;
    std::string lone;  // the only point of the current run, as a dot
    std::size_t run_points = 0;
    const auto flush = [&] {
      if (run_points >= 2) {
        out += fmt::format("<polyline fill=\"none\" stroke-width=\"2\"{} points=\"{}\"/>\n",
                           s.dashed ? dash : "", run);
      } else if (run_points == 1 && !dots) {
        out += lone;
      }
      run.clear();
      run_points = 0;
    };
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s.x[i], s.y[i])) {
        flush();
        continue;
      }
      const double x = px(tx(s.x[i]));
      const double y = py(ty(s.y[i]));
      run += fmt::format("{}{:.1f},{:.1f}", run.empty() ? "" : " ", x, y);
      if (++run_points == 1)
        lone = fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"/>\n", x, y);
    }
    flush();
    for (std::size_t i = 0; dots && i < s.x.size(); ++i) {
      if (!drawable(s.x[i], s.y[i])) continue;
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"/>\n", px(tx(s.x[i])),
                         py(ty(s.y[i])));
    }
    out += "</g>\n";
  }
  if (clip) out += "</g>\n";

  // 6. The legend: a short line in the series' colour (and dash) before each name; inside the
  //    plotting area on a white box that lets the grid show through a little.
  if (!outside) {
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#ffffff\" "
        "fill-opacity=\"0.85\" stroke=\"#cccccc\"/>\n",
        legend_x - 8, plot_y + 10, legend_w + 12, static_cast<int>(series.size()) * row + 8);
  }
  out += fmt::format("<g font-size=\"{}\" fill=\"#333333\">\n", font);
  for (std::size_t k = 0; k < series.size(); ++k) {
    const int y = legend_y + static_cast<int>(k) * row;
    out += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>\n",
        legend_x, y, legend_x + 24, y, kLineColors[k % kLineColors.size()],
        series[k].dashed ? dash : "");
    out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", legend_x + 30, y + font * 7 / 20,
                       xml_escape(series[k].name));
  }
  out += "</g>\n";
  return out + "</svg>\n";
}

std::string diagram_svg(const std::string& title, const std::vector<DiagramNode>& nodes) {
  using Kind = DiagramNode::Kind;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].kind == Kind::add)
      require(nodes[i].skip_from < i, "attn::diagram_svg", [&] {
        return fmt::format("node {} adds the input of node {}, which is not an earlier node", i,
                           nodes[i].skip_from);
      });
  // 1. Layout: one column, boxes 300 wide, "+" circles of radius 11, arrows 22 long between.
  const int font = 13, note_font = 11, title_font = 15;
  int box_w = 300;  // wider when a label or note needs it (monospace notes: 0.62 em a character)
  for (const DiagramNode& n : nodes) {
    box_w = std::max(box_w, text_width(n.label, font) + 28);
    box_w =
        std::max(box_w, static_cast<int>(characters(n.note).size()) * note_font * 62 / 100 + 28);
  }
  const int gap = 22, radius = 11;
  const int x_mid = 40 + box_w / 2;
  const auto height_of = [&](const DiagramNode& n) {
    if (n.kind == Kind::add) return 2 * radius;
    const int lines = n.note.empty() ? 1 : 2;
    return n.kind == Kind::text ? 8 + lines * 16 : 14 + lines * 16;
  };
  std::vector<int> top(nodes.size());
  int y = title.empty() ? 16 : 48;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    top[i] = y;
    y += height_of(nodes[i]) + gap;
  }
  const int height = y - gap + 16;
  int width = x_mid + box_w / 2 + 70;  // room for the residual lines on the right
  width = std::max(width, 24 + text_width(title, title_font));

  // An arrowhead the edges end in.
  constexpr std::string_view kArrow =
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
      "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
      "<path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#555555\"/></marker></defs>\n";
  std::string out = svg_start(width, height, title, 12, title_font, kArrow);
  // 2. Arrows between consecutive nodes, then the residual lines around the right side: from
  //    the arrow that enters node `skip_from` to the "+" node.
  out += "<g stroke=\"#555555\" stroke-width=\"1.5\" fill=\"none\">\n";
  for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" marker-end=\"url(#arrow)\"/>\n", x_mid,
        top[i] + height_of(nodes[i]), top[i + 1]);
  }
  int lane = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].kind != Kind::add) continue;
    const std::size_t from = nodes[i].skip_from;
    const int y0 = from == 0 ? top[0] - gap / 2 : top[from] - gap / 2;
    const int y1 = top[i] + radius;
    const int x_lane = x_mid + box_w / 2 + 24 + 14 * (lane++ % 2);
    out += fmt::format(
        "<polyline points=\"{0},{1} {2},{1} {2},{3} {4},{3}\" "
        "marker-end=\"url(#arrow)\"/>\n",
        x_mid, y0, x_lane, y1, x_mid + radius);
    out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"#555555\"/>\n", x_mid, y0);
  }
  out += "</g>\n";
  // 3. The nodes.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const DiagramNode& n = nodes[i];
    const int h = height_of(n);
    if (n.kind == Kind::add) {
      out += fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"#ffffff\" stroke=\"#555555\" "
          "stroke-width=\"1.5\"/>\n",
          x_mid, top[i] + radius, radius);
      out += fmt::format(
          "<text x=\"{}\" y=\"{}\" font-size=\"17\" text-anchor=\"middle\" "
          "fill=\"#222222\">+</text>\n",
          x_mid, top[i] + radius + 6);
      continue;
    }
    if (n.kind == Kind::box) {
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"{}\" "
          "stroke=\"{}\" stroke-width=\"1.5\"/>\n",
          x_mid - box_w / 2, top[i], box_w, h, n.highlight ? "#fde0c5" : "#deebf7",
          n.highlight ? "#e6550d" : "#3182bd");
    }
    const int first = top[i] + (n.kind == Kind::box ? 7 : 4) + 13;
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"middle\" "
        "fill=\"#222222\">{}</text>\n",
        x_mid, first, font, xml_escape(n.label));
    if (!n.note.empty()) {
      out += fmt::format(
          "<text x=\"{}\" y=\"{}\" font-size=\"{}\" font-family=\"{}\" "
          "text-anchor=\"middle\" fill=\"#555555\">{}</text>\n",
          x_mid, first + 16, note_font, kMono, xml_escape(n.note));
    }
  }
  return out + "</svg>\n";
}

void write_svg(const std::filesystem::path& path, const std::string& svg) {
  auto fail = [&](const std::string& reason) {
    throw std::runtime_error(fmt::format("cannot write '{}': {}", path.string(), reason));
  };
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) fail(ec.message());
  }
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) fail(std::strerror(errno));
  const bool written = std::fwrite(svg.data(), 1, svg.size(), file) == svg.size();
  const int saved_errno = errno;
  if (std::fclose(file) != 0 || !written) fail(std::strerror(written ? errno : saved_errno));
}

}  // namespace attn
