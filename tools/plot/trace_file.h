// Reading a trace-event JSON file (what syncgrad-train --trace and profiler::Trace write, or any Chrome /
// Perfetto trace of the same format) and checking it against the format: a {"traceEvents": [...]} object or a
// bare array; every event an object with a one-letter "ph", a "name", integer "pid" and "tid", a numeric "ts"
// (all but metadata), a "dur" >= 0 on complete ("X") events, an "id" on flow ("s", "t", "f") events, and an
// object "args" when present. syncgrad-trace-svg draws what it reads; the trace tests check it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace syncgrad::plot {

struct TraceSpan {
  int pid = 0;
  int64_t tid = 0;
  std::string name, category;
  double ts_us = 0, dur_us = 0;
  std::map<std::string, double> numbers;     // numeric args
  std::map<std::string, std::string> texts;  // text args
  double end_us() const { return ts_us + dur_us; }
  // A numeric arg, or `fallback`.
  double number(const std::string& key, double fallback = -1) const;
};

struct TraceFlow {
  char phase = 's';  // 's', 't' or 'f'
  uint64_t id = 0;
  int pid = 0;
  int64_t tid = 0;
  double ts_us = 0;
};

struct TraceFile {
  std::vector<TraceSpan> spans;  // "X" events, in file order
  std::vector<TraceFlow> flows;
  std::map<int, std::string> process_names;                        // "M" process_name
  std::map<std::pair<int, int64_t>, std::string> thread_names;     // "M" thread_name
  size_t events = 0;                                               // of every phase
};

// ValueError naming the file and the first event (by index) that breaks the format, or IOError.
TraceFile read_trace_file(const std::string& path);
TraceFile parse_trace(const std::string& text, const std::string& what = "trace");

// Spans on one thread that overlap without one containing the other (each described), at most `limit`.
std::vector<std::string> nesting_problems(const TraceFile& trace, size_t limit = 10);

}  // namespace syncgrad::plot
