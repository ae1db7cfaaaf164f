// render_timeline_svg: lanes per (rank, thread), nested span rows, a millisecond axis, a category legend (see
// svg_timeline.h). Text escaping and the document's opening come from svg_plot.h.
#include "tools/plot/svg_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tools/plot/svg_plot.h"

namespace syncgrad::plot {
namespace {

constexpr double kLabelWidth = 260, kRight = 20, kTop = 60, kRowHeight = 16, kLaneGap = 8, kAxisHeight = 40;
constexpr double kCharWidth = 6.5;  // of the 11 px labels, roughly

const std::vector<std::string> kPalette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

struct Lane {
  int pid;
  int64_t tid;
  std::vector<std::pair<const TraceSpan*, int>> spans;  // with their nesting depth
  int depth = 1;
};

std::vector<Lane> lanes_of(const TraceFile& trace, double from_us, double to_us) {
  std::map<std::pair<int, int64_t>, std::vector<const TraceSpan*>> by_thread;
  for (const TraceSpan& s : trace.spans) {
    if (s.end_us() >= from_us && s.ts_us <= to_us) by_thread[{s.pid, s.tid}].push_back(&s);
  }
  std::vector<Lane> lanes;
  for (auto& [key, spans] : by_thread) {
    std::stable_sort(spans.begin(), spans.end(), [](const TraceSpan* a, const TraceSpan* b) {
      return a->ts_us != b->ts_us ? a->ts_us < b->ts_us : a->dur_us > b->dur_us;
    });
    Lane lane{key.first, key.second, {}, 1};
    std::vector<const TraceSpan*> open;
    for (const TraceSpan* s : spans) {
      while (!open.empty() && open.back()->end_us() <= s->ts_us) open.pop_back();
      const int depth = static_cast<int>(open.size());
      lane.spans.emplace_back(s, depth);
      lane.depth = std::max(lane.depth, depth + 1);
      open.push_back(s);
    }
    lanes.push_back(std::move(lane));
  }
  return lanes;
}

std::string lane_label(const TraceFile& trace, const Lane& lane) {
  const auto process = trace.process_names.find(lane.pid);
  const auto thread = trace.thread_names.find({lane.pid, lane.tid});
  return (process != trace.process_names.end() ? process->second : "pid " + std::to_string(lane.pid)) + " / " +
         (thread != trace.thread_names.end() ? thread->second : "tid " + std::to_string(lane.tid));
}

// A tick step of 1, 2 or 5 x 10^k ms giving at most about 10 ticks.
double tick_step(double span_ms) {
  const double raw = span_ms / 10;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

}  // namespace

std::string render_timeline_svg(const TraceFile& trace, const TimelineOptions& o) {
  SYNCGRAD_CHECK(!trace.spans.empty(), ValueError, "timeline: the trace has no spans (\"X\" events) to draw");
  double first_us = trace.spans.front().ts_us, last_us = trace.spans.front().end_us();
  for (const TraceSpan& s : trace.spans) {
    first_us = std::min(first_us, s.ts_us);
    last_us = std::max(last_us, s.end_us());
  }
  const double from_us = first_us + o.from_ms * 1000;
  const double to_us = o.to_ms < 0 ? last_us : first_us + o.to_ms * 1000;
  SYNCGRAD_CHECK(o.from_ms >= 0 && to_us > from_us, ValueError, "timeline: the window [", o.from_ms, ", ", o.to_ms,
                 "] ms is empty; the trace spans ", (last_us - first_us) / 1000, " ms");
  const std::vector<Lane> lanes = lanes_of(trace, from_us, to_us);
  SYNCGRAD_CHECK(!lanes.empty(), ValueError, "timeline: no span lies in the window [", o.from_ms, ", ", o.to_ms,
                 "] ms");
  std::map<std::string, std::string> colors;
  for (const TraceSpan& s : trace.spans) {
    if (!colors.count(s.category)) colors[s.category] = kPalette[colors.size() % kPalette.size()];
  }
  double height = kTop;
  for (const Lane& lane : lanes) height += lane.depth * kRowHeight + kLaneGap;
  const double axis_y = height;
  height += kAxisHeight + 24;
  const double x0 = kLabelWidth, x1 = o.width - kRight;
  const auto x_of = [&](double us) {
    return x0 + (std::clamp(us, from_us, to_us) - from_us) / (to_us - from_us) * (x1 - x0);
  };

  std::string svg = svg_document_start(o.width, height, o.title);
  double legend_x = 10;
  for (const auto& [category, color] : colors) {
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"32\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"42\" font-size=\"11\">{}</text>\n",
        legend_x, color, legend_x + 16, svg_escape(category.empty() ? "(none)" : category));
    legend_x += 24 + kCharWidth * static_cast<double>(std::max<size_t>(category.size(), 6));
  }
  double y = kTop;
  for (const Lane& lane : lanes) {
    const double lane_height = lane.depth * kRowHeight;
    svg += fmt::format("<g class=\"lane\" data-pid=\"{}\" data-tid=\"{}\">\n", lane.pid, lane.tid);
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#f4f4f4\"/>\n", x0, y,
                       x1 - x0, lane_height);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n", 6.0, y + 12,
                       svg_escape(lane_label(trace, lane)));
    for (const auto& [span, depth] : lane.spans) {
      const double left = x_of(span->ts_us), right = std::max(x_of(span->end_us()), left + 0.5);
      const double top = y + depth * kRowHeight + 1;
      svg += fmt::format(
          "<rect class=\"span\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" "
          "stroke=\"white\" stroke-width=\"0.3\"><title>{} ({:.3f} ms)</title></rect>\n",
          left, top, right - left, kRowHeight - 2, colors[span->category], svg_escape(span->name), span->dur_us / 1000);
      const size_t fits = static_cast<size_t>((right - left - 4) / kCharWidth);
      if (fits >= 3) {
        const std::string label = span->name.size() <= fits ? span->name : span->name.substr(0, fits - 1) + "~";
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"white\">{}</text>\n", left + 2,
                           top + kRowHeight - 5, svg_escape(label));
      }
    }
    svg += "</g>\n";
    y += lane_height + kLaneGap;
  }
  const double span_ms = (to_us - from_us) / 1000, step = tick_step(span_ms);
  svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"black\"/>\n", x0,
                     axis_y, x1);
  for (double t = 0; t <= span_ms + 1e-9; t += step) {
    const double px = x0 + t / span_ms * (x1 - x0);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\" font-size=\"11\">{4:g}</text>\n",
        px, axis_y, axis_y + 5, axis_y + 18, o.from_ms + t);
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time (ms)</text>\n", (x0 + x1) / 2,
                     axis_y + 36);
  svg += "</svg>\n";
  return svg;
}

}  // namespace syncgrad::plot
