// Timeline events and how code records them: scoped spans (`Scope`), the hand-off of a span's cause from the
// thread that queues work to the thread that runs it (`Label`, `hand_off`), and thread names. This is the part
// of the profiler every layer uses (the autograd engine, the data loader's workers, the process groups, the
// Reducer, the trainer); the session that turns recording on and writes the trace is profiler/trace.h.
//
// Cost: while no trace records, a Scope is one relaxed atomic load and nothing else (no clock read, no
// allocation, no name built). While one records, an event goes to the calling thread's own buffer without a
// lock (profiler/thread_buffer.h).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace syncgrad::profiler {

namespace detail {
extern std::atomic<bool> recording;
}  // namespace detail

// True while a Trace records (profiler/trace.h). One relaxed atomic load.
inline bool recording() noexcept { return detail::recording.load(std::memory_order_relaxed); }

// The steady clock in nanoseconds (the trace's time base on this process).
int64_t now_ns() noexcept;

// One trace event, as the Chrome / Perfetto trace-event format knows it: a complete span ('X'), an instant
// ('i'), or the start ('s') / end ('f') of a flow arrow joining two spans (on different threads).
struct Event {
  struct Number {
    const char* key = nullptr;
    int64_t value = 0;
  };
  static constexpr size_t kMaxNumbers = 4;

  char phase = 'X';
  const char* category = "";  // a string literal: "train", "autograd", "ddp", "gloo", "nccl", "data"
  std::string name;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  uint64_t flow_id = 0;  // 's' / 'f' events, and spans that start or end a flow (also written as args.flow)
  std::array<Number, kMaxNumbers> numbers{};  // args with integer values (bucket, step, bytes, ...)
  size_t number_count = 0;
  const char* text_key = nullptr;  // one optional text arg, e.g. caller = "DDP bucket"
  std::string text;

  void add_number(const char* key, int64_t value);
};

// Appends `event` to this thread's buffer (only call while recording()).
void record(Event event);

// Names the calling thread in the trace ("gloo worker", "data worker 2", "main"); cheap, and kept for the
// threads a trace started later sees too. Threads never named show as "thread N".
void set_thread_name(const std::string& name);

// What queued a piece of work, as the worker that runs it later should name it: a cause ("DDP bucket"), an
// index (the bucket's) and the step, set for a scope on the queueing thread. Nestable; always cheap.
class Label {
 public:
  Label(const char* cause, int64_t index = -1, int64_t step = -1) noexcept;
  ~Label();
  Label(const Label&) = delete;
  Label& operator=(const Label&) = delete;

  const char* cause() const { return cause_; }
  int64_t index() const { return index_; }
  int64_t step() const { return step_; }
  static const Label* current() noexcept;

 private:
  const char* cause_;
  int64_t index_;
  int64_t step_;
  const Label* outer_;
};

// Work queued on this thread to run on another (a collective for the process group's worker): a flow from
// here to the span that runs it, and the Label in effect when it was queued. Empty while not recording.
struct Handoff {
  uint64_t flow_id = 0;  // 0: none
  const char* cause = nullptr;
  int64_t index = -1;
  int64_t step = -1;
};
// While recording: a new flow id, its start event on this thread now, and the current Label. Else empty.
Handoff hand_off();

// A span from construction to destruction on the calling thread, recorded when a trace was recording at
// construction. Names are string literals, or built only when active():
//   profiler::Scope span("autograd");
//   if (span.active()) span.set_name(node->name());
class Scope {
 public:
  // Spans of `category` shorter than the trace's threshold (TraceOptions::min_detail_us) are dropped: the
  // autograd engine's nodes use it.
  enum class Detail { kAlways, kAboveThreshold };

  explicit Scope(const char* category, const char* name = "", Detail detail = Detail::kAlways) {
    if (recording()) begin(category, name, detail);
  }
  ~Scope() {
    if (event_) end();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  bool active() const { return event_.has_value(); }
  void set_name(std::string name);
  Scope& arg(const char* key, int64_t value);
  Scope& text(const char* key, std::string value);
  // Ends the flow of `handoff` at this span and names its cause in the args.
  void receive(const Handoff& handoff);
  // Names the calling thread's current Label (if any) in the args, as receive() does for a hand-off.
  void name_label();

 private:
  void begin(const char* category, const char* name, Detail detail);
  void end();

  std::optional<Event> event_;
  bool above_threshold_only_ = false;
  uint64_t session_ = 0;
};

// Records a complete span whose times were measured by the caller (e.g. a training step from its start).
void record_span(const char* category, std::string name, int64_t start_ns, int64_t end_ns,
                 const char* number_key = nullptr, int64_t number = 0);

}  // namespace syncgrad::profiler
