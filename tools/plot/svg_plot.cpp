// render_svg: axes with power-of-two (or 1-2-2.5-5 decimal) ticks, polylines and markers, a legend on the right.
#include "tools/plot/svg_plot.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::plot {
namespace {

constexpr double kWidth = 760, kHeight = 480;
constexpr double kLeft = 70, kRight = 250, kTop = 40, kBottom = 60;  // margins; the legend sits on the right

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
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
      default:
        out += c;
    }
  }
  return out;
}

// The tick step for about five ticks over `span`: 1, 2, 2.5 or 5 x 10^k.
double nice_step(double span) {
  const double raw = span / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  }
  return 10 * magnitude;
}

struct Axis {
  double min, max;
  bool log2;
  double from, to;  // pixels
  double map(double v) const {
    const double t =
        log2 ? (std::log2(v) - std::log2(min)) / (std::log2(max) - std::log2(min)) : (v - min) / (max - min);
    return from + t * (to - from);
  }
  std::vector<double> ticks() const {
    std::vector<double> values;
    if (log2) {
      const int first = static_cast<int>(std::ceil(std::log2(min) - 1e-9));
      const int last = static_cast<int>(std::floor(std::log2(max) + 1e-9));
      const int stride = std::max(1, (last - first) / 10 + 1);
      for (int e = first; e <= last; e += stride) values.push_back(std::ldexp(1.0, e));
    } else {
      const double step = nice_step(max - min);
      for (double k = std::ceil(min / step - 1e-9); k * step <= max + 1e-9 * step; ++k) {
        values.push_back(std::abs(k * step) < 1e-12 * step ? 0.0 : k * step);
      }
    }
    return values;
  }
};

void check_range(double lo, double hi, bool log2, const char* which) {
  SYNCGRAD_CHECK(hi > lo && !(log2 && lo <= 0), ValueError,
                 fmt::format("render_svg: the {} range [{}, {}] is empty{}", which, lo, hi,
                             log2 ? " or not positive (log axis)" : ""));
}

std::string tick_label(double v) { return v >= 1 || v == 0 ? fmt::format("{:g}", v) : fmt::format("{:.2g}", v); }

}  // namespace

std::pair<double, double> nice_linear_range(double lo, double hi) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::abs(lo) / 2;
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo);
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step};
}

std::string render_svg(const PlotSpec& spec) {
  check_range(spec.x_min, spec.x_max, spec.log2_x, "x");
  check_range(spec.y_min, spec.y_max, spec.log2_y, "y");
  const Axis x{spec.x_min, spec.x_max, spec.log2_x, kLeft, kWidth - kRight};
  const Axis y{spec.y_min, spec.y_max, spec.log2_y, kHeight - kBottom, kTop};
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"14\">{3}</text>\n",
      kWidth, kHeight, 10, escape(spec.title));
  for (double t : x.ticks()) {
    const double px = x.map(t);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e0e0e0\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        px, kTop, kHeight - kBottom, kHeight - kBottom + 18, tick_label(t));
  }
  for (double t : y.ticks()) {
    const double py = y.map(t);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e0e0e0\"/>\n"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, py, kWidth - kRight, kLeft - 6, py + 4, tick_label(t));
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", kLeft,
                     kTop, kWidth - kRight - kLeft, kHeight - kBottom - kTop);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (kLeft + kWidth - kRight) / 2,
                     kHeight - 20, escape(spec.x_label));
  svg += fmt::format("<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">{1}</text>\n",
                     (kTop + kHeight - kBottom) / 2, escape(spec.y_label));
  const auto inside = [&](const std::pair<double, double>& p) {
    return p.first >= spec.x_min && p.first <= spec.x_max && p.second >= spec.y_min && p.second <= spec.y_max;
  };
  for (size_t i = 0; i < spec.series.size(); ++i) {
    const Series& s = spec.series[i];
    const std::string dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
    if (s.line) {
      std::string points;
      for (const auto& p : s.points) {
        if (inside(p)) points += fmt::format("{:.1f},{:.1f} ", x.map(p.first), y.map(p.second));
      }
      svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", points,
                         s.color, dash);
    }
    for (const auto& p : s.points) {
      if (!inside(p)) continue;
      if (s.marker == "circle") {
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>\n", x.map(p.first),
                           y.map(p.second), s.color);
      } else if (s.marker == "square") {
        svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"9\" height=\"9\" fill=\"{}\"/>\n",
                           x.map(p.first) - 4.5, y.map(p.second) - 4.5, s.color);
      }
    }
    const double ly = kTop + 10 + 20 * static_cast<double>(i), lx = kWidth - kRight + 15;
    if (s.line) {
      svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", lx, ly,
                         lx + 28, ly, s.color, dash);
    }
    if (s.marker == "circle")
      svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/>\n", lx + 14, ly, s.color);
    if (s.marker == "square") {
      svg +=
          fmt::format("<rect x=\"{}\" y=\"{}\" width=\"9\" height=\"9\" fill=\"{}\"/>\n", lx + 9.5, ly - 4.5, s.color);
    }
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", lx + 36, ly + 4, escape(s.name));
  }
  svg += "</svg>\n";
  return svg;
}

void write_svg(const std::string& path, const PlotSpec& spec) {
  const std::string svg = render_svg(spec);
  std::ofstream out(path);
  out << svg;
  out.flush();
  SYNCGRAD_CHECK(out, IOError, "cannot write ", path, " (does its directory exist?)");
}

}  // namespace syncgrad::plot

namespace syncgrad::plot {

std::string svg_escape(const std::string& text) { return escape(text); }

std::string svg_document_start(double width, double height, const std::string& title) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"22\" font-size=\"14\">{2}</text>\n",
      width, height, escape(title));
}

void write_svg_file(const std::string& path, const std::string& svg) {
  std::ofstream out(path);
  out << svg;
  out.flush();
  SYNCGRAD_CHECK(out, IOError, "cannot write ", path, " (does its directory exist?)");
}

}  // namespace syncgrad::plot
