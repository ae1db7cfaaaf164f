// Timing two variants of one piece of work side by side (syncgrad-bench winograd, gpt-kernels): each runs once
// to warm up, then alternately `reps` times, and the fastest wall time of each is kept, so that a noisy
// machine's slow moments fall on both alike.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

namespace syncgrad::bench {

// Seconds of the fastest of `reps` samples of one call of each of the two functions, alternating a, b, a, b.
inline std::pair<double, double> fastest_alternating(int reps, const std::function<void()>& a,
                                                     const std::function<void()>& b) {
  auto seconds = [](const std::function<void()>& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  a();
  b();
  double best_a = 1e30, best_b = 1e30;
  for (int r = 0; r < reps; ++r) {
    best_a = std::min(best_a, seconds(a));
    best_b = std::min(best_b, seconds(b));
  }
  return {best_a, best_b};
}

}  // namespace syncgrad::bench
