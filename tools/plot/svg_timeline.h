// A timeline picture of a trace (trace_file.h) as SVG: one lane per (rank, thread), labelled "rank 0 / main
// (training loop)", a rectangle per span (nested spans drawn one row further down inside their lane, coloured
// by category, with the name written in when it fits and as a tooltip), a time axis in milliseconds from the
// first span, a legend of the categories. syncgrad-trace-svg writes it.
#pragma once

#include <string>

#include "tools/plot/trace_file.h"

namespace syncgrad::plot {

struct TimelineOptions {
  std::string title = "syncgrad timeline";
  double width = 1400;  // pixels
  // The window drawn, in milliseconds from the first span; a negative end: to the last span.
  double from_ms = 0, to_ms = -1;
};

// ValueError when the trace has no span, or the window is empty or holds none.
std::string render_timeline_svg(const TraceFile& trace, const TimelineOptions& options = {});

}  // namespace syncgrad::plot
