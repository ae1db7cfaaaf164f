// syncgrad-trace-svg: draws a trace-event JSON file (syncgrad-train --trace, profiler::Trace) as an SVG timeline,
// one lane per (rank, thread), after checking it against the trace-event format. For looking at a trace where
// no browser is at hand (a report, a CI artifact); ui.perfetto.dev and chrome://tracing open the JSON itself.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <set>
#include <string>

#include "tensor/errors.h"
#include "tools/plot/svg_plot.h"
#include "tools/plot/svg_timeline.h"
#include "tools/plot/trace_file.h"

int main(int argc, char** argv) {
  CLI::App app{"syncgrad-trace-svg: draw a trace-event JSON file (syncgrad-train --trace) as an SVG timeline"};
  std::string trace_path, svg_path;
  syncgrad::plot::TimelineOptions options;
  app.add_option("trace", trace_path, "the trace (JSON)")->required();
  app.add_option("svg", svg_path, "the picture to write (.svg)")->required();
  app.add_option("--from-ms", options.from_ms, "start of the window, in ms after the first span")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--to-ms", options.to_ms, "end of the window, in ms after the first span (default: the end)");
  app.add_option("--width", options.width, "picture width in pixels")->check(CLI::Range(400.0, 100000.0));
  app.add_option("--title", options.title, "the picture's title")->capture_default_str();
  try {
    app.parse(argc, argv);
    const syncgrad::plot::TraceFile trace = syncgrad::plot::read_trace_file(trace_path);
    syncgrad::plot::write_svg_file(svg_path, syncgrad::plot::render_timeline_svg(trace, options));
    std::set<int> ranks;
    std::set<std::pair<int, int64_t>> lanes;
    for (const auto& span : trace.spans) {
      ranks.insert(span.pid);
      lanes.insert({span.pid, span.tid});
    }
    std::printf("wrote %s: %zu spans on %zu lanes of %zu process(es)\n", svg_path.c_str(), trace.spans.size(),
                lanes.size(), ranks.size());
    return 0;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const syncgrad::Error& e) {
    std::fprintf(stderr, "syncgrad-trace-svg: error: %s\n", e.what());
    return 1;
  }
}
