// Work: completion, waiting with a timeout, and error propagation for background collectives.
#include "distributed/work.h"

#include "distributed/errors.h"
#include "distributed/flight_recorder.h"
#include "distributed/rank_heartbeat.h"

namespace syncgrad::distributed {

void Work::wait(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) timeout = default_timeout_;
  std::unique_lock lock(mutex_);
  // The backend's own deadline for the operation usually passes at the same moment (a process resumed after
  // SIGSTOP wakes both threads at once): a short grace lets its error, which names the peer awaited, win over
  // this generic one.
  const auto backend_grace = std::chrono::milliseconds{250};
  if (!done_cv_.wait_for(lock, timeout, [&] { return done_; }) &&
      !done_cv_.wait_for(lock, backend_grace, [&] { return done_; })) {
    lock.unlock();
    on_timeout();
    const std::string message = description_ + " did not finish within " + std::to_string(timeout.count()) +
                                " ms: a peer rank is dead, stuck, or running a different collective (every rank "
                                "must call the same collectives in the same order); the group is aborted";
    if (!flight_) throw TimeoutError(message);
    throw TimeoutError(message + "\n" + flight_->explain_failure(static_cast<int64_t>(flight_seq_), message, true));
  }
  if (error_) std::rethrow_exception(error_);
}

bool Work::is_completed() {
  std::lock_guard lock(mutex_);
  return done_;
}

std::exception_ptr Work::error() {
  std::lock_guard lock(mutex_);
  return error_;
}

void Work::finish(std::exception_ptr error) {
  const bool failed = error != nullptr;
  {
    std::lock_guard lock(mutex_);
    if (done_) return;
    done_ = true;
    error_ = std::move(error);
    finished_ = std::chrono::steady_clock::now();
  }
  if (flight_) flight_->mark_finished(flight_seq_, failed);
  if (!failed) heartbeat::note_progress();
  done_cv_.notify_all();
}

void Work::mark_started() {
  {
    std::lock_guard lock(mutex_);
    started_ = std::chrono::steady_clock::now();
  }
  if (flight_) flight_->mark_started(flight_seq_);
}

std::exception_ptr Work::explained(std::exception_ptr error) {
  return flight_ ? flight_->explained(std::move(error), static_cast<int64_t>(flight_seq_)) : error;
}

void Work::set_flight(std::shared_ptr<FlightRecorder> recorder, uint64_t seq) {
  flight_ = std::move(recorder);
  flight_seq_ = seq;
}

double Work::busy_seconds() {
  std::lock_guard lock(mutex_);
  if (!done_ || started_ == std::chrono::steady_clock::time_point{}) return 0;
  return std::chrono::duration<double>(finished_ - started_).count();
}

}  // namespace syncgrad::distributed
