// Recording events: the clock, scoped spans, labels and flow hand-offs (see events.h).
#include "profiler/events.h"

#include <chrono>

#include "profiler/session_state.h"
#include "profiler/thread_buffer.h"

namespace syncgrad::profiler {

namespace detail {
std::atomic<bool> recording{false};
std::atomic<uint64_t> session{0};
std::atomic<int64_t> detail_threshold_ns{50'000};
std::atomic<size_t> events_per_thread{1'000'000};
}  // namespace detail

namespace {

thread_local const Label* current_label = nullptr;
std::atomic<uint64_t> next_flow_id{1};

void append(Event&& event) {
  detail::this_thread_buffer().append(std::move(event), detail::session.load(std::memory_order_relaxed),
                                      detail::events_per_thread.load(std::memory_order_relaxed));
}

}  // namespace

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Event::add_number(const char* key, int64_t value) {
  if (number_count < kMaxNumbers) numbers[number_count++] = {key, value};
}

void record(Event event) { append(std::move(event)); }

void set_thread_name(const std::string& name) { detail::this_thread_buffer().set_name(name); }

Label::Label(const char* cause, int64_t index, int64_t step) noexcept
    : cause_(cause), index_(index), step_(step), outer_(current_label) {
  current_label = this;
}

Label::~Label() { current_label = outer_; }

const Label* Label::current() noexcept { return current_label; }

Handoff hand_off() {
  if (!recording()) return {};
  Handoff handoff;
  handoff.flow_id = next_flow_id.fetch_add(1, std::memory_order_relaxed);
  if (const Label* label = current_label) {
    handoff.cause = label->cause();
    handoff.index = label->index();
    handoff.step = label->step();
  }
  Event start;
  start.phase = 's';
  start.category = "flow";
  start.name = handoff.cause != nullptr ? handoff.cause : "queued work";
  start.start_ns = now_ns();
  start.flow_id = handoff.flow_id;
  append(std::move(start));
  return handoff;
}

void Scope::begin(const char* category, const char* name, Detail detail) {
  event_.emplace();
  event_->category = category;
  event_->name = name;
  above_threshold_only_ = detail == Detail::kAboveThreshold;
  session_ = detail::session.load(std::memory_order_relaxed);
  event_->start_ns = now_ns();
}

void Scope::end() {
  Event& event = *event_;
  event.duration_ns = now_ns() - event.start_ns;
  if (above_threshold_only_ && event.duration_ns < detail::detail_threshold_ns.load(std::memory_order_relaxed)) {
    return;
  }
  if (session_ != detail::session.load(std::memory_order_relaxed)) return;  // begun in an earlier trace
  append(std::move(event));
}

void Scope::set_name(std::string name) {
  if (event_) event_->name = std::move(name);
}

Scope& Scope::arg(const char* key, int64_t value) {
  if (event_) event_->add_number(key, value);
  return *this;
}

Scope& Scope::text(const char* key, std::string value) {
  if (event_) {
    event_->text_key = key;
    event_->text = std::move(value);
  }
  return *this;
}

void Scope::receive(const Handoff& handoff) {
  if (!event_ || handoff.flow_id == 0) return;
  Event finish;
  finish.phase = 'f';
  finish.category = "flow";
  finish.name = handoff.cause != nullptr ? handoff.cause : "queued work";
  finish.start_ns = event_->start_ns;
  finish.flow_id = handoff.flow_id;
  append(std::move(finish));
  event_->flow_id = handoff.flow_id;
  if (handoff.cause != nullptr) text("caller", handoff.cause);
  if (handoff.index >= 0) arg("index", handoff.index);
  if (handoff.step >= 0) arg("step", handoff.step);
}

void Scope::name_label() {
  const Label* label = current_label;
  if (!event_ || label == nullptr) return;
  text("caller", label->cause());
  if (label->index() >= 0) arg("index", label->index());
  if (label->step() >= 0) arg("step", label->step());
}

void record_span(const char* category, std::string name, int64_t start_ns, int64_t end_ns, const char* number_key,
                 int64_t number) {
  if (!recording()) return;
  Event event;
  event.category = category;
  event.name = std::move(name);
  event.start_ns = start_ns;
  event.duration_ns = end_ns - start_ns;
  if (number_key != nullptr) event.add_number(number_key, number);
  append(std::move(event));
}

}  // namespace syncgrad::profiler
