// PhaseTimer: seconds since the previous lap, for splitting a training step into phases.
#pragma once

#include <chrono>

namespace syncgrad::bench {

class PhaseTimer {
 public:
  using Clock = std::chrono::steady_clock;

  // Seconds since construction or the previous lap().
  double lap() {
    const auto now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  Clock::time_point last_ = Clock::now();
};

}  // namespace syncgrad::bench
