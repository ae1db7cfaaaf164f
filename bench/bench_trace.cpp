// syncgrad-bench trace: what one timeline span costs (profiler/events.h), while no trace records (the check
// every instrumented place pays always) and while one does (clock reads and the append to the thread's buffer),
// and how many spans a step of the traced MLP records, so that the cost per step follows
// (bench/trace_overhead.sh measures whole steps).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "profiler/trace.h"

namespace {

// Nanoseconds per span of `repeats` spans, the median of 5 rounds.
double ns_per_span(int repeats) {
  std::vector<double> rounds;
  for (int round = 0; round < 5; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats; ++i) {
      syncgrad::profiler::Scope span("bench", "span");
      span.arg("i", i);
    }
    rounds.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
                     repeats);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[2];
}

}  // namespace

int bench_trace_main(int argc, char** argv) {
  CLI::App app{"syncgrad-bench trace: the cost of one timeline span, tracing off and on"};
  int repeats = 200000;
  app.add_option("--repeats", repeats, "spans per round (5 rounds, median)")->check(CLI::Range(1000, 100000000));
  CLI11_PARSE(app, argc, argv);
  const double off = ns_per_span(repeats);
  double on = 0;
  {
    syncgrad::profiler::Trace trace({.max_events_per_thread = static_cast<size_t>(repeats) * 5});
    on = ns_per_span(repeats);
  }
  std::printf("span while no trace records: %.2f ns\nspan while a trace records:  %.1f ns\n", off, on);
  return 0;
}
