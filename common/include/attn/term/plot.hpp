// attn/term/plot.hpp: heatmaps, in the terminal and as SVG for the docs; line charts and block
// diagrams as SVG.
// Attention weights are easiest to read as a picture: one cell per (query, key) pair, darker
// where the query attends more. In a colour terminal the cells are shaded with 256-colour
// backgrounds; otherwise (not a TTY, NO_COLOR set, or `plain` asked for) each cell is a
// character from a fixed ramp " .:-=+*#%@", so transcripts stay plain text.
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"

namespace attn {

struct HeatmapOptions {
  std::string title;                    // printed above the map / SVG title
  std::vector<std::string> row_labels;  // one per row, e.g. the query characters
  std::vector<std::string> col_labels;  // one per column
  std::string x_label;                  // SVG: what the columns are, under the map ("key")
  std::string y_label;                  // SVG: what the rows are, written upwards on the left
  std::optional<float> vmin;            // colour scale; default: the finite min of the matrix
  std::optional<float> vmax;            // default: the finite max
  bool annotate = true;                 // SVG: write the value in each cell (if it fits)
  int precision = 2;                    // digits for annotations and the legend
  bool diverging = false;               // SVG: blue (low) - white (middle) - red (high), for
                                        // signed values centred on 0 (give vmin = -vmax)
};

// True when `stream` is a terminal and NO_COLOR is unset or empty.
bool use_color(std::FILE* stream);

// The terminal heatmap as text. color=false gives the plain character ramp. NaN cells print as
// '?' and -inf as ' ' (nothing to see there), both listed in the legend line under the map.
std::string heatmap_text(const Matrix& m, const HeatmapOptions& options, bool color);

// A self-contained SVG document (no scripts, no external fonts), byte-identical for equal input.
std::string heatmap_svg(const Matrix& m, const HeatmapOptions& options);

// A line chart: one polyline per series over shared axes, with ticks, axis labels and a legend
// (chapter 01's loss curve, chapter 06's activations, chapter 08's gradient norms by depth,
// chapter 09's training curve). Points whose y is not finite, or that are <= 0 on a log axis,
// are left out and break the line there, so a series that overflows simply stops; a point left
// alone by such breaks is drawn as a dot.
struct Series {
  std::string name;       // legend entry
  std::vector<double> x;  // as many as y, all finite
  std::vector<double> y;
  bool dashed = false;
  std::optional<bool> dots = std::nullopt;  // a dot on every point; default: the chart's
};
struct LineChartOptions {
  std::string title;    // printed above the chart / SVG title
  std::string x_label;  // under the x axis
  std::string y_label;  // above the y axis
  bool log_x = false;   // base-10 logarithmic axes, ticks at powers of ten
  bool log_y = false;
  std::vector<double> x_ticks;  // where to label the x axis; empty: round numbers (or decades)
  std::optional<double> y_min;  // default: the data's range (a 5% margin on a linear axis,
  std::optional<double> y_max;  // whole decades on a log one); lines beyond are clipped
  bool dots = false;            // a dot on every point of every series that does not say
  enum class Legend { outside, top_right, top_left };  // right of the plot, or inside a corner
  Legend legend = Legend::outside;
  int width = 640;  // of the plotting area, pixels (at least 100)
  int height = 360;
};
// A self-contained SVG document, byte-identical for equal input. Throws std::invalid_argument
// for no series, a series whose x and y differ in length, a non-finite x, an x tick that cannot
// be drawn, y_min/y_max that are not finite (or not > 0 on a log axis, or not in order), no
// drawable point at all, or a plotting area under 100 x 100 pixels.
std::string line_chart_svg(const std::vector<Series>& series, const LineChartOptions& options);

// A diagram read from top to bottom: boxes joined by arrows, "+" nodes where a residual
// connection adds the input of an earlier node back in (drawn as a line around the right side).
struct DiagramNode {
  enum class Kind { box, add, text };
  Kind kind = Kind::box;
  std::string label;          // box / text: the main line ("LayerNorm ln1")
  std::string note;           // a second, smaller line (a shape, "(B, T, C)"), may be empty
  std::size_t skip_from = 0;  // add: the index of the node whose input is added back
  bool highlight = false;     // box: drawn in the accent colour (e.g. attention, the only
                              // step that mixes positions)
};
// Throws std::invalid_argument for an add node whose skip_from is not an earlier node.
std::string diagram_svg(const std::string& title, const std::vector<DiagramNode>& nodes);

// Writes an SVG document (heatmap_svg, line_chart_svg, diagram_svg) to `path`, creating parent
// folders. Throws std::runtime_error naming the path if it cannot be written.
void write_svg(const std::filesystem::path& path, const std::string& svg);

}  // namespace attn
