// profiler::Trace: a recording session of timeline events (profiler/events.h) and their Chrome / Perfetto
// trace-event JSON, which ui.perfetto.dev and chrome://tracing open. One Trace at a time per process:
//
//   syncgrad::profiler::Trace trace;          // records from here (or Trace(options, false) + start())
//   { syncgrad::profiler::Scope span("train", "forward"); ... }
//   trace.stop();
//   trace.write("trace.json");                // this process alone; distributed/trace_gather.h merges ranks
//
// Each thread's events become one track (pid = the rank, tid = the thread), named by set_thread_name; spans
// are complete events ("X", ts and dur in microseconds), flows ("s"/"f") join a collective's launch to the
// worker thread that ran it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "profiler/events.h"

namespace syncgrad::profiler {

struct TraceOptions {
  // Spans marked Detail::kAboveThreshold (the autograd engine's nodes) shorter than this are left out.
  int64_t min_detail_us = 50;
  // Each thread keeps at most this many events per trace; later ones are counted as dropped.
  size_t max_events_per_thread = 1'000'000;
};

// One thread's recorded events.
struct ThreadTrace {
  uint64_t tid = 0;
  std::string name;  // "" when the thread was never named
  std::vector<Event> events;
  uint64_t dropped = 0;
};

class Trace {
 public:
  // ValueError when another Trace exists, or for a negative threshold or a zero event limit.
  explicit Trace(TraceOptions options = {}, bool start_recording = true);
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // Recording can be switched on and off (e.g. for a window of steps); events of a span that began while on
  // are kept.
  void start();
  void stop();
  bool is_recording() const;
  const TraceOptions& options() const { return options_; }

  // The threads that recorded events (a snapshot; other threads may go on recording).
  std::vector<ThreadTrace> threads() const;
  // This process's events as a comma-separated list of trace-event JSON objects (no brackets), with
  // pid = `pid`, the process and thread names as metadata ("M") events, and every timestamp moved by
  // `offset_ns` onto a reference clock (another rank's, see distributed/trace_clock.h).
  std::string event_list_json(int pid, const std::string& process_name, int64_t offset_ns = 0) const;
  // This process's trace alone, written to `path` (IOError naming it when that fails).
  void write(const std::string& path) const;

 private:
  TraceOptions options_;
  uint64_t session_;
};

// The trace-event document around event lists: {"traceEvents":[...], "displayTimeUnit":"ms", "otherData":
// {key: value, ...}} (values are written as JSON strings).
std::string trace_document(const std::vector<std::string>& event_lists,
                           const std::vector<std::pair<std::string, std::string>>& other_data);
// Writes `content` to `path` atomically (a complete file or none); IOError naming the path.
void write_trace_file(const std::string& path, const std::string& content);
// Checks that a trace can be written to `path` (its directory exists and is writable, the path is not a
// directory) without creating it; IOError naming the path and the reason.
void check_trace_path(const std::string& path);

}  // namespace syncgrad::profiler
