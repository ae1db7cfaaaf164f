// ThreadLoad: where one process's threads spent a measured stretch of time, from the kernel's per-thread
// scheduler accounting (/proc/self/task/<tid>/schedstat: time on a core, time runnable but waiting for one).
// The scaling bench reads it before and after the measured steps: on a machine whose cores are shared (by the
// ranks, their Gloo threads and other processes) the compute thread's wait for a core is a per-run quantity
// that the scaling model takes as measured. The kernel updates a running thread's figures at scheduler ticks,
// so a difference is exact to a tick or two: read it over many steps, not one.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace syncgrad::bench {

struct ThreadLoad {
  double main_cpu = 0;    // seconds the calling (compute) thread ran on a core
  double main_wait = 0;   // seconds it was runnable but waited for a core
  double other_cpu = 0;   // the same, summed over the process's other threads (Gloo, DataParallel workers)
  double other_wait = 0;

  ThreadLoad operator-(const ThreadLoad& earlier) const;
  ThreadLoad operator/(double steps) const;
};

// This process's figures now, the calling thread counted as "main"; nullopt where the kernel does not provide
// schedstat (then the model falls back to the forward's slowdown alone).
std::optional<ThreadLoad> read_thread_load();

nlohmann::json to_json(const ThreadLoad& load);
ThreadLoad thread_load_from_json(const nlohmann::json& j);

}  // namespace syncgrad::bench
