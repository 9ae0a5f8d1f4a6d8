// Tests for attn/term/plot.hpp: terminal heatmaps (plain and colour) and SVG figures.
// Plain heatmaps appear in the docs, so their exact text is pinned here; SVGs are checked for
// well-formedness basics, escaping and byte-for-byte determinism.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/term/plot.hpp"

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A fresh temporary folder, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "attn_plot_XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Sets or unsets an environment variable for the life of the object.
struct EnvGuard {
  std::string name;
  std::optional<std::string> saved;
  EnvGuard(std::string n, const char* value) : name(std::move(n)) {
    if (const char* old = std::getenv(name.c_str())) saved = old;
    if (value == nullptr) {
      unsetenv(name.c_str());
    } else {
      setenv(name.c_str(), value, 1);
    }
  }
  ~EnvGuard() {
    if (saved) {
      setenv(name.c_str(), saved->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
};

const attn::Matrix kCausal = {{1.0f, -kInf, -kInf, -kInf},
                              {0.5f, 0.5f, -kInf, -kInf},
                              {0.2f, 0.3f, 0.5f, -kInf},
                              {0.1f, 0.2f, 0.3f, 0.4f}};

}  // namespace

TEST_SUITE("common.plot") {
TEST_CASE("the plain heatmap maps values onto the ramp ' .:-=+*#%@'") {
  // Ten equal bins between vmin and vmax: 0.00-0.09 ' ', 0.10-0.19 '.', ..., 0.90-1.00 '@'.
  // Mid-bin values, because 0.7f is really 0.69999999 (bin 6) and would make the test fragile.
  const attn::Matrix m = {
      {0.0f, 0.15f, 0.25f, 0.35f, 0.45f, 0.55f, 0.65f, 0.75f, 0.85f, 0.95f, 1.0f}};
  attn::HeatmapOptions o;
  CHECK(attn::heatmap_text(m, o, false) ==
        "  |  . : - = + * # % @ @|\n"
        "  scale: ' ' = 0.00 ... '@' = 1.00\n");
}

TEST_CASE("the plain heatmap of causal weights, with title and labels") {
  attn::HeatmapOptions o;
  o.title = "weights";
  o.row_labels = {"a", "b", "c", "d"};
  o.col_labels = {"a", "b", "c", "d"};
  o.vmin = 0.0f;
  CHECK(attn::heatmap_text(kCausal, o, false) ==
        "weights\n"
        "     a b c d\n"
        "  a |@      |\n"
        "  b |+ +    |\n"
        "  c |: - +  |\n"
        "  d |. : - =|\n"
        "  scale: ' ' = 0.00 ... '@' = 1.00; ' ' = -inf\n");
}

TEST_CASE("the default scale is the finite min and max; NaN and inf do not stretch it") {
  const attn::Matrix m = {{2.0f, 4.0f}, {kNan, kInf}};
  attn::HeatmapOptions o;
  o.precision = 1;
  CHECK(attn::heatmap_text(m, o, false) ==
        "  |  @|\n"
        "  |? @|\n"
        "  scale: ' ' = 2.0 ... '@' = 4.0; '?' = NaN\n");
}

TEST_CASE("values outside vmin..vmax are clamped; a flat matrix sits mid-ramp") {
  attn::HeatmapOptions o;
  o.vmin = 0.0f;
  o.vmax = 1.0f;
  CHECK(attn::heatmap_text(attn::Matrix{{-5.0f, 5.0f}}, o, false) ==
        "  |  @|\n"
        "  scale: ' ' = 0.00 ... '@' = 1.00\n");
  CHECK(attn::heatmap_text(attn::Matrix{{0.25f, 0.25f}}, attn::HeatmapOptions{}, false) ==
        "  |+ +|\n"
        "  scale: ' ' = 0.25 ... '@' = 0.25\n");
}

TEST_CASE("row labels are aligned and long column labels are written vertically") {
  const attn::Matrix m = {{0.0f, 1.0f, 0.0f}, {1.0f, 0.0f, 1.0f}};
  attn::HeatmapOptions o;
  o.row_labels = {"' '", "é"};
  o.col_labels = {"a", "\\n", "' '"};
  CHECK(attn::heatmap_text(m, o, false) ==
        "           '\n"
        "         \\\n"
        "       a n '\n"
        "  ' ' |  @  |\n"
        "  é   |@   @|\n"
        "  scale: ' ' = 0.00 ... '@' = 1.00\n");
}

TEST_CASE("control characters in labels are replaced, so a line never breaks") {
  attn::HeatmapOptions o;
  o.row_labels = {"\n"};
  o.title = "a\tb";
  CHECK(attn::heatmap_text(attn::Matrix{{1.0f}}, o, false) ==
        "a?b\n"
        "  ? |+|\n"
        "  scale: ' ' = 1.00 ... '@' = 1.00\n");
}

TEST_CASE("the colour heatmap shades two spaces per cell and resets at each line end") {
  attn::HeatmapOptions o;
  o.vmin = 0.0f;
  const std::string text = attn::heatmap_text(kCausal, o, true);
  std::istringstream lines(text);
  std::string line;
  for (int row = 0; row < 4; ++row) {
    REQUIRE(std::getline(lines, line));
    CHECK(line.rfind("  \x1b[", 0) == 0);
    CHECK(line.substr(line.size() - 4) == "\x1b[0m");  // nothing bleeds into the next line
  }
  REQUIRE(std::getline(lines, line));
  CHECK(line.rfind("  scale: 0.00 \x1b[48;5;16m ", 0) == 0);
  CHECK(line.find("\x1b[0m 1.00; blank = -inf") != std::string::npos);
  CHECK_FALSE(std::getline(lines, line));
  CHECK(text.find("\x1b[48;5;231m  ") != std::string::npos);  // the 1.0 cell: white
  CHECK(count(text, "\x1b[48;5;") == 10 + 16);  // ten finite cells, sixteen legend steps
  CHECK(text.find("blank = -inf") != std::string::npos);
  CHECK(text.find("NaN") == std::string::npos);  // none in this matrix
}

TEST_CASE("colour mode marks NaN cells with ??") {
  const std::string text = attn::heatmap_text(attn::Matrix{{kNan, 1.0f}}, {}, true);
  CHECK(text.find("\x1b[0m??") != std::string::npos);
  CHECK(text.find("?? = NaN") != std::string::npos);
}

TEST_CASE("empty matrices and wrong label counts") {
  attn::HeatmapOptions o;
  o.title = "nothing";
  CHECK(attn::heatmap_text(attn::Matrix(std::array<std::size_t, 2>{0, 0}), o, false) ==
        "nothing\n  (empty)\n");
  attn::HeatmapOptions bad;
  bad.row_labels = {"a"};
  CHECK_THROWS_WITH_AS(attn::heatmap_text(attn::Matrix{{1.0f}, {2.0f}}, bad, false),
                       "attn::heatmap_text: expected 2 row labels, got 1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::heatmap_svg(attn::Matrix{{1.0f}, {2.0f}}, bad),
                       "attn::heatmap_svg: expected 2 row labels, got 1", std::invalid_argument);
}

TEST_CASE("use_color is false for a file, and for a terminal only without NO_COLOR") {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  CHECK_FALSE(attn::use_color(file));
  std::fclose(file);
  CHECK_FALSE(attn::use_color(nullptr));

  // A pseudo-terminal stands in for a real one.
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || ptsname(master) == nullptr) {
    MESSAGE("no pseudo-terminal available: the terminal half of this test is skipped");
    if (master >= 0) close(master);
    return;
  }
  std::FILE* tty = std::fopen(ptsname(master), "w");
  REQUIRE(tty != nullptr);
  {
    EnvGuard unset("NO_COLOR", nullptr);
    CHECK(attn::use_color(tty));
  }
  {
    EnvGuard empty("NO_COLOR", "");
    CHECK(attn::use_color(tty));
  }
  {
    EnvGuard set("NO_COLOR", "1");
    CHECK_FALSE(attn::use_color(tty));
  }
  std::fclose(tty);
  close(master);
}

TEST_CASE("an SVG is a self-contained document, identical for equal input") {
  attn::HeatmapOptions o;
  o.title = "causal weights";
  o.row_labels = {"a", "b", "c", "d"};
  o.col_labels = {"a", "b", "c", "d"};
  const std::string svg = attn::heatmap_svg(kCausal, o);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(count(svg, "<svg") == 1);
  CHECK(count(svg, "<g") == count(svg, "</g>"));
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("href") == std::string::npos);  // no external fonts or images
  CHECK(svg.find(">causal weights</text>") != std::string::npos);
  CHECK(svg.find("<title>causal weights</title>") != std::string::npos);
  CHECK(svg == attn::heatmap_svg(kCausal, o));
  CHECK(svg == attn::heatmap_svg(attn::Matrix(kCausal), o));
}

TEST_CASE("SVG cells: white to blue, annotated, -inf light grey, NaN grey") {
  const attn::Matrix m = {{0.0f, 1.0f}, {-kInf, kNan}};
  attn::HeatmapOptions o;
  const std::string svg = attn::heatmap_svg(m, o);
  CHECK(svg.find("fill=\"#f7fbff\"/>") != std::string::npos);            // 0: near white
  CHECK(svg.find("fill=\"#08306b\"/>") != std::string::npos);            // 1: dark blue
  CHECK(svg.find("fill=\"#ffffff\">1.00</text>") != std::string::npos);  // white on dark
  CHECK(svg.find("fill=\"#222222\">0.00</text>") != std::string::npos);  // dark on light
  CHECK(svg.find(">-inf</text>") != std::string::npos);
  CHECK(count(svg, ">NaN</text>") == 2);  // the cell and the legend
  CHECK(svg.find("fill=\"#ececec\"") != std::string::npos);
  CHECK(svg.find("fill=\"#9e9e9e\"") != std::string::npos);

  o.annotate = false;
  const std::string bare = attn::heatmap_svg(m, o);
  CHECK(bare.find("fill=\"#ffffff\">1.00</text>") == std::string::npos);
  CHECK(count(bare, ">1.00</text>") == 1);                // only the legend's top tick
  CHECK(bare.find(">-inf</text>") != std::string::npos);  // only the legend's
  CHECK(count(bare, ">NaN</text>") == 2);                 // NaN is always marked
}

TEST_CASE("SVG labels and titles are XML-escaped") {
  attn::HeatmapOptions o;
  o.title = "Q & K <\"heads\">";
  o.row_labels = {"<", "&"};
  o.col_labels = {"'", "\\n"};
  const std::string svg = attn::heatmap_svg(attn::Matrix{{1.0f, 0.0f}, {0.5f, 0.5f}}, o);
  CHECK(svg.find("Q &amp; K &lt;&quot;heads&quot;&gt;") != std::string::npos);
  CHECK(svg.find(">&lt;</text>") != std::string::npos);
  CHECK(svg.find(">&amp;</text>") != std::string::npos);
  CHECK(svg.find(">&apos;</text>") != std::string::npos);
  CHECK(svg.find(">\\n</text>") != std::string::npos);
  CHECK(svg.find("<\"") == std::string::npos);
}

TEST_CASE("SVG axis names: the columns' under the map, the rows' upwards on its left") {
  attn::HeatmapOptions o;
  o.row_labels = {"a", "b", "c", "d"};
  o.col_labels = {"a", "b", "c", "d"};
  const std::string plain = attn::heatmap_svg(kCausal, o);
  o.x_label = "key <s>";
  o.y_label = "query t";
  const std::string named = attn::heatmap_svg(kCausal, o);
  CHECK(named.find(">key &lt;s&gt;</text>") != std::string::npos);
  CHECK(named.find("rotate(-90") != std::string::npos);
  CHECK(named.find(">query t</text>") != std::string::npos);
  CHECK(plain.find("rotate(-90") == std::string::npos);  // none asked, none drawn
  CHECK(count(named, "<text") == count(plain, "<text") + 2);
  // The map moves right and the document grows to make room for them.
  CHECK(named.find("<rect x=\"") != std::string::npos);
  CHECK(named.size() > plain.size());
  CHECK(named != plain);
}

TEST_CASE("big SVG maps get smaller cells and drop annotations that do not fit") {
  const attn::Matrix m = xt::ones<float>({65, 65}) / 65.0f;
  const std::string svg = attn::heatmap_svg(m, {});
  CHECK(svg.find("width=\"8\" height=\"8\"") != std::string::npos);
  CHECK(count(svg, ">0.02</text>") == 2);                  // the legend's two ticks, no cell values
  CHECK(count(svg, "<rect") == 1 + 65 * 65 + 1 + 10 + 1);  // background, cells, frame, legend
}

TEST_CASE("write_svg creates the folders and writes the bytes") {
  TempDir dir;
  const std::filesystem::path path = dir.path / "figures" / "03" / "weights.svg";
  const std::string svg = attn::heatmap_svg(kCausal, {});
  attn::write_svg(path, svg);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream read;
  read << in.rdbuf();
  CHECK(read.str() == svg);
}

TEST_CASE("write_svg names the path and the reason when it cannot write") {
  TempDir dir;
  const std::filesystem::path file = dir.path / "plain_file";
  std::ofstream(file) << "x";
  // A folder cannot be created inside a file, even by root.
  const std::string inside_file = "cannot write '" + (file / "sub" / "x.svg").string() + "': ";
  CHECK_THROWS_WITH_AS(attn::write_svg(file / "sub" / "x.svg", "<svg/>"),
                       doctest::Contains(inside_file.c_str()), std::runtime_error);
  // A folder is not a file.
  CHECK_THROWS_WITH_AS(attn::write_svg(dir.path, "<svg/>"),
                       ("cannot write '" + dir.path.string() + "': Is a directory").c_str(),
                       std::runtime_error);
}

TEST_CASE("a diverging SVG map goes blue - white - red around the middle of the scale") {
  const attn::Matrix m = {{-1.0f, 0.0f, 1.0f}};
  attn::HeatmapOptions o;
  o.diverging = true;
  o.vmin = -1.0f;
  o.vmax = 1.0f;
  const std::string svg = attn::heatmap_svg(m, o);
  CHECK(svg.find("fill=\"#053061\"/>") != std::string::npos);  // -1: dark blue
  CHECK(svg.find("fill=\"#f7f7f7\"/>") != std::string::npos);  // 0: near white
  CHECK(svg.find("fill=\"#67001f\"/>") != std::string::npos);  // 1: dark red
  o.diverging = false;
  CHECK(attn::heatmap_svg(m, o).find("#67001f") == std::string::npos);
}

TEST_CASE("a diagram joins its boxes with arrows and draws each residual to its + node") {
  using Kind = attn::DiagramNode::Kind;
  std::vector<attn::DiagramNode> nodes = {{Kind::text, "x", "(B, T, C)"},
                                          {Kind::box, "LayerNorm", ""},
                                          {Kind::box, "attention", "", 0, true},
                                          {Kind::add, "", "", 1},
                                          {Kind::text, "out", ""}};
  const std::string svg = attn::diagram_svg("block", nodes);
  CHECK(count(svg, "marker-end=\"url(#arrow)\"") == 4 + 1);  // 4 arrows, 1 residual
  CHECK(count(svg, "<rect x=") == 2);                        // the two boxes
  CHECK(svg.find("fill=\"#fde0c5\"") != std::string::npos);  // the highlighted one
  CHECK(svg.find(">(B, T, C)</text>") != std::string::npos);
  nodes[3].skip_from = 3;  // must be an earlier node
  CHECK_THROWS_AS(attn::diagram_svg("block", nodes), std::invalid_argument);
}
// ---- Line charts (line_chart_svg).

TEST_CASE(
    "a line chart is a self-contained document with one polyline and legend entry per series") {
  const std::vector<attn::Series> series = {
      {"up", {1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}},
      {"down & out", {1.0, 2.0, 3.0}, {3.0, 2.0, 1.0}},
  };
  attn::LineChartOptions o;
  o.title = "a & <b>";
  o.x_label = "step";
  o.y_label = "value";
  o.dots = true;
  const std::string svg = attn::line_chart_svg(series, o);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(count(svg, "<g") == count(svg, "</g>"));
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(count(svg, "<polyline") == 2);
  CHECK(count(svg, "<circle") == 6);
  CHECK(svg.find("<title>a &amp; &lt;b&gt;</title>") != std::string::npos);
  CHECK(svg.find(">down &amp; out</text>") != std::string::npos);
  CHECK(svg.find(">step</text>") != std::string::npos);
  CHECK(svg.find(">value</text>") != std::string::npos);
  CHECK(svg.find("stroke=\"#0072b2\"") != std::string::npos);  // first colour (Okabe-Ito)
  CHECK(svg.find("stroke=\"#d55e00\"") != std::string::npos);  // second colour
  CHECK(svg.find("clip-path") == std::string::npos);           // nothing to clip without y limits
  CHECK(svg == attn::line_chart_svg(series, o));               // deterministic
}

TEST_CASE("a line chart breaks a line at non-finite points and draws dashed series dashed") {
  attn::Series a{"loss", {0, 1, 2, 3}, {4.0, 3.0, 2.5, 2.4}};
  attn::Series b{"with a gap", {0, 1, 2, 3, 4}, {1.0, 1.5, kNan, 2.0, 3.0}, true};
  attn::Series c{"alone", {0, 1, 2, 3}, {2.0, kNan, 3.0, 3.5}};  // its first point is alone
  attn::LineChartOptions o;
  o.x_label = "step";
  const std::string svg = attn::line_chart_svg({a, b, c}, o);
  CHECK(count(svg, "<polyline") == 4);         // a in one piece, b in two, c's last two points
  CHECK(count(svg, "stroke-dasharray") == 3);  // b's two pieces and its legend line
  CHECK(count(svg, "<circle") == 1);           // c's lone first point, which no line would show
  CHECK(svg.find(">with a gap</text>") != std::string::npos);
  CHECK(svg.find(">step</text>") != std::string::npos);
  CHECK(svg == attn::line_chart_svg({a, b, c}, o));  // deterministic

  SUBCASE("a series asks for dots when the chart does not") {
    a.dots = true;
    CHECK(count(attn::line_chart_svg({a, b, c}, o), "<circle") == 4 + 1);
  }
  SUBCASE("the chart asks for dots and a series declines") {
    o.dots = true;
    a.dots = false;
    const std::string dotted = attn::line_chart_svg({a, b, c}, o);
    CHECK(count(dotted, "<circle") == 4 + 3);  // b's and c's drawable points, none of a's
    CHECK(count(dotted, "<polyline") == 4);
  }
}

TEST_CASE("line chart points: the smallest y near the bottom, the largest near the top") {
  // Area 200 x 100; y from 1 to 3 with a 5% margin each side, ticks 1, 1.5, ... 3.
  const std::vector<attn::Series> series = {{"s", {0.0, 10.0}, {1.0, 3.0}}};
  attn::LineChartOptions o;
  o.width = 200;
  o.height = 100;
  const auto points = [](const std::string& svg) {
    const std::size_t at = svg.find("points=\"");
    REQUIRE(at != std::string::npos);
    std::array<double, 4> p{};
    REQUIRE(std::sscanf(svg.c_str() + at + 8, "%lf,%lf %lf,%lf", &p[0], &p[1], &p[2], &p[3]) == 4);
    return p;
  };
  const std::string svg = attn::line_chart_svg(series, o);
  // Two points: the left and right edges of the area, 200 px apart; 2 / 2.2 of its height apart.
  const auto p = points(svg);
  CHECK(p[2] - p[0] == doctest::Approx(200.0));
  CHECK(p[1] - p[3] == doctest::Approx(100.0 * 2.0 / 2.2).epsilon(0.002));
  CHECK(svg.find(">1.5</text>") != std::string::npos);
  CHECK(svg.find(">10</text>") != std::string::npos);

  SUBCASE("y_min and y_max set the range exactly, and clip what lies beyond") {
    o.y_min = 1.0;
    o.y_max = 3.0;
    const auto q = points(attn::line_chart_svg(series, o));
    CHECK(q[1] - q[3] == doctest::Approx(100.0));  // bottom to top of the area
    o.y_min = 0.0;
    o.y_max = 2.0;  // the second point is beyond the top
    const std::string clipped = attn::line_chart_svg(series, o);
    CHECK(clipped.find("<clipPath id=\"plot\">") != std::string::npos);
    CHECK(clipped.find("clip-path=\"url(#plot)\"") != std::string::npos);
    CHECK(clipped.find(">0</text>") != std::string::npos);
    CHECK(clipped.find(">2</text>") != std::string::npos);
    const auto r = points(clipped);
    // 50 px per unit now: y = 1 is half-way up, y = 3 is 50 px above the top, cut by the clip.
    CHECK(r[1] - r[3] == doctest::Approx(100.0));
    const std::string clip_rect =
        "<clipPath id=\"plot\"><rect x=\"" + std::to_string(std::lround(r[0])) + "\" y=\"" +
        std::to_string(std::lround(r[1] - 50.0)) + "\" width=\"200\" height=\"100\"/>";
    CHECK(clipped.find(clip_rect) != std::string::npos);  // the clip is the plotting area
  }
}

TEST_CASE(
    "a log axis has ticks at powers of ten; non-finite and non-positive points break the line") {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<attn::Series> series = {
      {"grows", {1.0, 2.0, 3.0, 4.0, 5.0}, {0.01, 1.0, 100.0, inf, 1e4}},
      {"zero", {1.0, 2.0, 3.0}, {1.0, 0.0, 1.0}},
  };
  attn::LineChartOptions o;
  o.log_y = true;
  o.dots = true;
  const std::string svg = attn::line_chart_svg(series, o);
  for (const char* tick : {">0.01</text>", ">0.1</text>", ">1</text>", ">10</text>", ">100</text>",
                           ">1000</text>", ">1e+04</text>"}) {
    const std::string text = tick;
    CAPTURE(text);
    CHECK(svg.find(text) != std::string::npos);
  }
  // "grows": 0.01, 1, 100 in one line, the inf point breaks it, 1e4 alone (a dot, no line);
  // "zero": 0 cannot be drawn on a log axis, so two single dots.
  CHECK(count(svg, "<polyline") == 1);
  CHECK(count(svg, "<circle") == 4 + 2);
  // Without dots, the points left alone are still dots: 1e4, and both of "zero"'s.
  o.dots = false;
  const std::string plain = attn::line_chart_svg(series, o);
  CHECK(count(plain, "<polyline") == 1);
  CHECK(count(plain, "<circle") == 1 + 2);
  // Many decades: every second one labelled (at most about 8 labels).
  const std::string wide =
      attn::line_chart_svg({attn::Series{"g", {1, 2, 3}, {0.1, 1.0, 1e13}}}, o);
  CHECK(wide.find(">1e+13</text>") != std::string::npos);
  CHECK(wide.find(">1e+11</text>") != std::string::npos);
  CHECK(wide.find(">1e+12</text>") == std::string::npos);
}

TEST_CASE("a log x axis with given ticks spaces 1, 2, 4, 8 evenly") {
  const std::vector<attn::Series> series = {
      {"s", {1.0, 2.0, 4.0, 8.0, 0.0}, {1.0, 1.0, 1.0, 1.0, 1.0}}};
  attn::LineChartOptions o;
  o.log_x = true;
  o.x_ticks = {1.0, 2.0, 4.0, 8.0};
  o.dots = true;
  const std::string svg = attn::line_chart_svg(series, o);
  for (const char* tick : {">1</text>", ">2</text>", ">4</text>", ">8</text>"}) {
    const std::string text = tick;
    CAPTURE(text);
    CHECK(svg.find(text) != std::string::npos);
  }
  CHECK(count(svg, "<circle") == 4);  // x = 0 cannot be drawn on a log axis
  const std::size_t at = svg.find("points=\"");
  REQUIRE(at != std::string::npos);
  double x[4] = {}, y[4] = {};
  REQUIRE(std::sscanf(svg.c_str() + at + 8, "%lf,%lf %lf,%lf %lf,%lf %lf,%lf", &x[0], &y[0], &x[1],
                      &y[1], &x[2], &y[2], &x[3], &y[3]) == 8);
  CHECK(x[1] - x[0] == doctest::Approx(x[2] - x[1]).epsilon(0.002));  // 0.1 px rounding
  CHECK(x[3] - x[2] == doctest::Approx(x[2] - x[1]).epsilon(0.002));
  // Without given ticks a log x axis is labelled at its decades.
  o.x_ticks.clear();
  const std::string decades =
      attn::line_chart_svg({attn::Series{"s", {1.0, 10.0, 100.0}, {1.0, 2.0, 3.0}}}, o);
  CHECK(decades.find(">100</text>") != std::string::npos);
  CHECK(decades.find(">10</text>") != std::string::npos);
}

TEST_CASE("the legend sits right of the plot, or inside a top corner on a box") {
  const std::vector<attn::Series> series = {{"a long series name", {0.0, 1.0}, {0.0, 1.0}}};
  attn::LineChartOptions o;
  o.width = 300;
  using Legend = attn::LineChartOptions::Legend;
  const auto legend_x = [](const std::string& svg) {  // x1 of the legend's line
    const std::size_t at = svg.rfind("<line x1=\"");
    REQUIRE(at != std::string::npos);
    return std::atoi(svg.c_str() + at + 10);
  };
  const auto width = [](const std::string& svg) {
    return std::atoi(svg.c_str() + svg.find("width=\"") + 7);
  };
  const std::string outside = attn::line_chart_svg(series, o);
  o.legend = Legend::top_right;
  const std::string top_right = attn::line_chart_svg(series, o);
  o.legend = Legend::top_left;
  const std::string top_left = attn::line_chart_svg(series, o);
  CHECK(outside.find("fill-opacity") == std::string::npos);  // no box outside the plot
  CHECK(top_right.find("fill-opacity=\"0.85\"") != std::string::npos);
  CHECK(top_left.find("fill-opacity=\"0.85\"") != std::string::npos);
  CHECK(width(outside) > width(top_right));  // room for the legend on the right
  CHECK(width(top_right) == width(top_left));
  CHECK(legend_x(top_left) < legend_x(top_right));
  CHECK(legend_x(top_right) < legend_x(outside));
  CHECK(legend_x(outside) > width(top_right) - 12);  // right of the plotting area
}

TEST_CASE("line charts reject bad input with a one-line message") {
  const std::vector<attn::Series> none;
  CHECK_THROWS_WITH_AS(attn::line_chart_svg(none, {}),
                       "attn::line_chart_svg: no series to draw; expected at least one",
                       std::invalid_argument);
  const std::vector<attn::Series> mismatched = {{"bad", {1.0, 2.0}, {1.0}}};
  CHECK_THROWS_WITH_AS(attn::line_chart_svg(mismatched, {}),
                       "attn::line_chart_svg: series 'bad' has 2 x values and 1 y values; "
                       "expected as many of each",
                       std::invalid_argument);
  const std::vector<attn::Series> nan_x = {
      {"s", {std::numeric_limits<double>::quiet_NaN()}, {1.0}}};
  CHECK_THROWS_WITH_AS(attn::line_chart_svg(nan_x, {}),
                       "attn::line_chart_svg: series 's' has x[0] = nan; expected finite x values",
                       std::invalid_argument);
  const std::vector<attn::Series> nothing = {{"s", {1.0, 2.0}, {-1.0, 0.0}}};
  attn::LineChartOptions log;
  log.log_y = true;
  CHECK_THROWS_AS(attn::line_chart_svg(nothing, log), std::invalid_argument);
  CHECK_NOTHROW(attn::line_chart_svg(nothing, {}));  // fine on a linear axis
  const std::vector<attn::Series> all_nan = {{"s", {1.0, 2.0}, {kNan, kNan}}};
  CHECK_THROWS_AS(attn::line_chart_svg(all_nan, {}), std::invalid_argument);

  const std::vector<attn::Series> ok = {{"s", {1.0, 2.0}, {1.0, 2.0}}};
  attn::LineChartOptions small;
  small.height = 99;
  CHECK_THROWS_WITH_AS(attn::line_chart_svg(ok, small),
                       "attn::line_chart_svg: a plotting area of 640 x 99 pixels is too small; "
                       "expected at least 100 x 100",
                       std::invalid_argument);
  attn::LineChartOptions bad_tick;
  bad_tick.log_x = true;
  bad_tick.x_ticks = {0.0};
  CHECK_THROWS_AS(attn::line_chart_svg(ok, bad_tick), std::invalid_argument);
  bad_tick.log_x = false;
  CHECK_NOTHROW(attn::line_chart_svg(ok, bad_tick));  // 0 is a fine tick on a linear axis
  bad_tick.x_ticks = {std::numeric_limits<double>::infinity()};
  CHECK_THROWS_AS(attn::line_chart_svg(ok, bad_tick), std::invalid_argument);
  attn::LineChartOptions limits;
  limits.y_min = 2.0;
  limits.y_max = 1.0;
  CHECK_THROWS_WITH_AS(attn::line_chart_svg(ok, limits),
                       "attn::line_chart_svg: y_min 2 is not below y_max 1; expected y_min < y_max",
                       std::invalid_argument);
  limits.y_min = 0.0;
  CHECK_NOTHROW(attn::line_chart_svg(ok, limits));
  limits.log_y = true;  // 0 cannot be a limit of a log axis
  CHECK_THROWS_AS(attn::line_chart_svg(ok, limits), std::invalid_argument);
  limits.log_y = false;
  limits.y_min = kNan;
  CHECK_THROWS_AS(attn::line_chart_svg(ok, limits), std::invalid_argument);
}
}
