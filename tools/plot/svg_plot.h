// A small SVG line-and-marker plot writer (log2 or linear axes, a legend): the scaling bench's speedup curves
// and syncgrad-plot's metrics pictures draw through it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace syncgrad::plot {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
  std::string color = "#000000";
  bool line = true;  // join the points
  bool dashed = false;
  std::string marker;  // "", "circle" or "square"
};

struct PlotSpec {
  std::string title, x_label, y_label;
  double x_min = 1, x_max = 2, y_min = 1, y_max = 2;
  bool log2_x = true, log2_y = true;
  std::vector<Series> series;
};

// A linear axis range that holds [lo, hi] and ends on ticks of a 1, 2, 2.5 or 5 x 10^k step (about five of
// them), as render_svg draws them: [0.12, 2.31] -> [0, 2.5]. A single value gets a range around it.
std::pair<double, double> nice_linear_range(double lo, double hi);

// The plot as an SVG document. ValueError for an empty or non-positive log range.
std::string render_svg(const PlotSpec& spec);
// render_svg written to `path`; IOError naming the path when that fails.
void write_svg(const std::string& path, const PlotSpec& spec);

}  // namespace syncgrad::plot

namespace syncgrad::plot {

// The pieces other pictures (svg_timeline.h) build on: text escaped for SVG, the opening of a document of the
// given size on a white background with a title, and writing a document to a file (IOError naming the path).
std::string svg_escape(const std::string& text);
std::string svg_document_start(double width, double height, const std::string& title);
void write_svg_file(const std::string& path, const std::string& svg);

}  // namespace syncgrad::plot
