// GradientClock: when each parameter's gradient became final in backward, from post-accumulate hooks -- the
// moments DDP can start reducing a bucket. Register it after DistributedDataParallel so that its hook runs after
// DDP's (whose copy into the bucket is then counted).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "nn/module.h"
#include "bench/scaling/step_profile.h"

namespace syncgrad::bench {

class GradientClock {
 public:
  explicit GradientClock(const nn::StateDict& parameters);

  // Call right before backward.
  void start();
  // Keeps the last backward's times (call after it, for the measured steps).
  void record();
  // Each parameter's median time over the recorded steps, in the order they became ready.
  std::vector<GradientReady> profile() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct State {
    Clock::time_point start;
    std::vector<Clock::time_point> ready;
  };
  std::shared_ptr<State> state_;  // shared with the hooks
  std::vector<double> bytes_;
  std::vector<int64_t> numel_;
  std::vector<std::vector<double>> history_;  // [parameter][step]
};

}  // namespace syncgrad::bench
