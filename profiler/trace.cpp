// profiler::Trace: the session switch, the snapshot of every thread's buffer and the trace-event JSON (see
// trace.h).
#include "profiler/trace.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "profiler/session_state.h"
#include "profiler/thread_buffer.h"
#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/io/atomic_file.h"

namespace syncgrad::profiler {
namespace {

std::atomic<bool> trace_exists{false};

// Microseconds with nanosecond digits, as the format's "ts" and "dur" are.
nlohmann::json micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

nlohmann::json metadata(const char* what, int pid, uint64_t tid, const nlohmann::json& args) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", args}};
}

// Flow ids count from 1 in every process; in a job's file they must differ between ranks.
uint64_t job_flow_id(uint64_t flow_id, int pid) { return (static_cast<uint64_t>(pid) << 40) + flow_id; }

nlohmann::json event_json(const Event& e, int pid, uint64_t tid, int64_t offset_ns) {
  nlohmann::json j = {{"name", e.name}, {"cat", e.category}, {"ph", std::string(1, e.phase)},
                      {"ts", micros(e.start_ns + offset_ns)}, {"pid", pid}, {"tid", tid}};
  if (e.phase == 'X') j["dur"] = micros(e.duration_ns);
  if (e.phase == 'i') j["s"] = "t";
  if (e.phase == 's' || e.phase == 'f') j["id"] = job_flow_id(e.flow_id, pid);
  if (e.phase == 'f') j["bp"] = "e";  // binds to the span that encloses it
  nlohmann::json args = nlohmann::json::object();
  for (size_t i = 0; i < e.number_count; ++i) args[e.numbers[i].key] = e.numbers[i].value;
  if (e.text_key != nullptr) args[e.text_key] = e.text;
  if (e.phase == 'X' && e.flow_id != 0) args["flow"] = job_flow_id(e.flow_id, pid);
  if (!args.empty()) j["args"] = std::move(args);
  return j;
}

}  // namespace

Trace::Trace(TraceOptions options, bool start_recording) : options_(options) {
  SYNCGRAD_CHECK(options.min_detail_us >= 0, ValueError, "profiler::Trace: min_detail_us must be >= 0, got ",
                 options.min_detail_us);
  SYNCGRAD_CHECK(options.max_events_per_thread > 0, ValueError,
                 "profiler::Trace: max_events_per_thread must be at least 1");
  bool expected = false;
  SYNCGRAD_CHECK(trace_exists.compare_exchange_strong(expected, true), ValueError,
                 "profiler::Trace: another trace is already recording in this process; destroy it first");
  detail::all_buffers(true);  // forget the threads that ended since the last trace
  detail::detail_threshold_ns.store(options.min_detail_us * 1000, std::memory_order_relaxed);
  detail::events_per_thread.store(options.max_events_per_thread, std::memory_order_relaxed);
  session_ = detail::session.fetch_add(1, std::memory_order_relaxed) + 1;
  if (start_recording) start();
}

Trace::~Trace() {
  stop();
  trace_exists.store(false);
}

void Trace::start() { detail::recording.store(true, std::memory_order_relaxed); }
void Trace::stop() { detail::recording.store(false, std::memory_order_relaxed); }
bool Trace::is_recording() const { return recording(); }

std::vector<ThreadTrace> Trace::threads() const {
  std::vector<ThreadTrace> result;
  for (const auto& buffer : detail::all_buffers(false)) {
    detail::ThreadBuffer::Snapshot snap = buffer->snapshot(session_);
    if (snap.events.empty() && snap.dropped == 0) continue;
    result.push_back({snap.tid, std::move(snap.name), std::move(snap.events), snap.dropped});
  }
  return result;
}

std::string Trace::event_list_json(int pid, const std::string& process_name, int64_t offset_ns) const {
  nlohmann::json events = nlohmann::json::array();
  events.push_back(metadata("process_name", pid, 0, {{"name", process_name}}));
  events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
  for (const ThreadTrace& thread : threads()) {
    const std::string name = thread.name.empty() ? "thread " + std::to_string(thread.tid) : thread.name;
    events.push_back(metadata("thread_name", pid, thread.tid, {{"name", name}}));
    events.push_back(metadata("thread_sort_index", pid, thread.tid, {{"sort_index", thread.tid}}));
    if (thread.dropped > 0 && !thread.events.empty()) {
      events.push_back({{"name", "events dropped (--trace limit)"}, {"ph", "i"}, {"s", "t"}, {"pid", pid},
                        {"tid", thread.tid}, {"ts", micros(thread.events.back().start_ns + offset_ns)},
                        {"args", {{"dropped", thread.dropped}}}});
    }
    for (const Event& e : thread.events) events.push_back(event_json(e, pid, thread.tid, offset_ns));
  }
  std::string text = events.dump();
  return text.substr(1, text.size() - 2);  // without the brackets, so that lists of several ranks concatenate
}

void Trace::write(const std::string& path) const {
  write_trace_file(path, trace_document({event_list_json(0, "process")}, {}));
}

std::string trace_document(const std::vector<std::string>& event_lists,
                           const std::vector<std::pair<std::string, std::string>>& other_data) {
  std::string text = "{\"traceEvents\":[";
  bool first = true;
  for (const std::string& list : event_lists) {
    if (list.empty()) continue;
    if (!first) text += ",\n";
    text += list;
    first = false;
  }
  nlohmann::json other = nlohmann::json::object();
  for (const auto& [key, value] : other_data) other[key] = value;
  text += "],\"displayTimeUnit\":\"ms\",\"otherData\":" + other.dump() + "}\n";
  return text;
}

void write_trace_file(const std::string& path, const std::string& content) {
  check_trace_path(path);
  io::AtomicFileWriter writer(path);
  writer.write(content.data(), content.size());
  writer.commit();
}

void check_trace_path(const std::string& path) {
  SYNCGRAD_CHECK(!path.empty(), IOError, "trace file: the path is empty; give a file name such as trace.json");
  namespace fs = std::filesystem;
  std::error_code error;
  SYNCGRAD_CHECK(!fs::is_directory(path, error), IOError, "trace file ", path,
                 ": is a directory; give a file name such as ", (fs::path(path) / "trace.json").string());
  fs::path directory = fs::path(path).parent_path();
  if (directory.empty()) directory = ".";
  SYNCGRAD_CHECK(fs::is_directory(directory, error), IOError, "trace file ", path, ": the directory ",
                 directory.string(), " does not exist; create it first");
  SYNCGRAD_CHECK(access(directory.c_str(), W_OK) == 0, IOError, "trace file ", path, ": cannot write in ",
                 directory.string(), " (", std::strerror(errno), ")");
}

}  // namespace syncgrad::profiler
