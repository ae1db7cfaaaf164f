// Work: the handle a collective returns. The collective runs in the background (Gloo: the group's worker
// thread; NCCL: the group's stream); wait() blocks until it is done and re-throws its error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

namespace syncgrad::distributed {

class FlightRecorder;

class Work {
 public:
  // `description` names the collective for error messages, e.g. "allreduce #12 (f32, 262144 elements)".
  Work(std::string description, std::chrono::milliseconds default_timeout)
      : description_(std::move(description)), default_timeout_(default_timeout) {}
  virtual ~Work() = default;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  // Blocks until the collective finished (timeout 0 = the group's timeout) and re-throws its error.
  // Past the timeout: TimeoutError naming the collective; the group is then unusable (aborted).
  virtual void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds{0});
  virtual bool is_completed();
  // The error it finished with, or null (also null while running).
  std::exception_ptr error();
  const std::string& description() const { return description_; }

  // Called by the backend once, when the collective ends (error = null on success).
  void finish(std::exception_ptr error = nullptr);
  // Called by the backend when the collective starts running (after earlier ones in the queue).
  void mark_started();
  // The flight recorder (flight_recorder.h) that notes this collective's start and end as entry `seq`; a wait()
  // that times out appends its explanation of where the ranks are.
  void set_flight(std::shared_ptr<FlightRecorder> recorder, uint64_t seq);
  // A failure of this collective with the flight recorder's explanation appended (unchanged without a recorder).
  std::exception_ptr explained(std::exception_ptr error);
  // Seconds the collective itself ran (start to finish; 0 until both happened): DDP's communication time.
  double busy_seconds();

 protected:
  // Called when wait() times out before finish(): the backend aborts the collective. Default: nothing.
  virtual void on_timeout() {}

 private:
  std::string description_;
  std::chrono::milliseconds default_timeout_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::chrono::steady_clock::time_point started_{};
  std::chrono::steady_clock::time_point finished_{};
  std::shared_ptr<FlightRecorder> flight_;
  uint64_t flight_seq_ = 0;
};

}  // namespace syncgrad::distributed
