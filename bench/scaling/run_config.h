// RunConfig: one measured configuration of the scaling bench (model, workers, batch, steps, DDP settings),
// and RunResult: what measuring it gave. The bench hands a RunConfig to DDP ranks and reads their results back
// in JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/scaling/collective_record.h"
#include "bench/scaling/step_profile.h"
#include "bench/scaling/step_record.h"
#include "bench/scaling/thread_load.h"

namespace syncgrad::bench {

struct RunConfig {
  std::string mode = "ddp";  // "single" (no wrapper), "dp" (DataParallel threads), "ddp" (one process per worker)
  std::string model = "mlp";
  int workers = 1;
  int64_t batch = 64;  // per worker: DataParallel splits workers x batch between its threads
  int steps = 20;
  int warmup = 3;
  bool loader = true;  // a DataLoader over synthetic examples (false: one fixed batch, no data-wait)
  int loader_workers = 0;
  double bucket_cap_mb = 25;
  double first_bucket_mb = 1;
  bool overlap = true;
  std::string hook = "allreduce";
  bool allreduce_sweep = false;  // DDP ranks time allreduce over a range of sizes after training
  double timeout_seconds = 120;  // process group and rendezvous timeout of DDP ranks
  uint64_t seed = 0;

  // e.g. "ddp 2 workers, bucket 25 MB, overlap on, hook allreduce"
  std::string label() const;
};

struct AllreduceSample {
  double bytes = 0;
  double seconds = 0;  // median
};

struct RunResult {
  RunConfig config;
  std::vector<StepRecord> steps;  // DDP: every rank's steps
  StepRecord split;               // per-phase medians
  double wall_seconds = 0;        // the measured steps
  double mean_step_seconds = 0;   // wall_seconds / steps (combined repeats: their mean)
  double samples_per_second = 0;
  double noise = 0;                        // relative spread of the step times
  std::vector<double> peak_bytes;          // per worker
  double payload_bytes_per_step = 0;       // DDP: bytes handed to collectives per step and rank
  int buckets = 0;                         // DDP
  std::vector<GradientReady> gradients;    // DDP with one worker: when each gradient became final
  std::vector<AllreduceSample> allreduce;  // DDP with allreduce_sweep
  // Per measured step: the compute thread's and the other threads' time on a core and waiting for one. DDP: one
  // per rank; single and DP: one for the bench's process (the caller's thread is "main", DataParallel's workers
  // are among the others). Empty where the kernel does not report it.
  std::vector<ThreadLoad> thread_load;
  // DDP with more than one worker: the mean over steps of the slowest rank's compute (data, forward, backward,
  // optimizer: wall time, waits for a core included) minus the largest of the ranks' mean computes -- how much
  // later than its slowest rank on average a step that synchronises all ranks can go on.
  double rank_skew_seconds = 0;
  // DDP: rank 0's collectives of one step, replayed after training from 5 steps spread over the measured ones
  // and averaged (more than one worker).
  std::vector<CollectiveCost> collectives;
};

nlohmann::json to_json(const RunConfig& config);
RunConfig run_config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const RunResult& result);

}  // namespace syncgrad::bench
