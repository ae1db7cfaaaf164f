// The measurements of `syncgrad-bench scaling`: the single-worker baseline, DataParallel and DDP at each
// worker count, and the DDP sweeps at the largest one -- each configuration `repeats` times, the modes
// alternating, combined into one MeasuredPoint per configuration.
#pragma once

#include <string>
#include <vector>

#include "bench/scaling/run_config.h"
#include "bench/scaling/scaling_options.h"

namespace syncgrad::bench {

struct MeasuredPoint {
  std::string group;    // "main", or the sweep: "buckets", "overlap", "hooks"
  std::string setting;  // the sweep's value, e.g. "5 MB", "off", "fp16"; empty for main runs
  RunResult result;     // the repeats combined
  std::vector<RunResult> repeats;
};

struct Measurements {
  std::vector<MeasuredPoint> points;  // single first, then per worker count dp and ddp, then the sweeps
  // The point of (group, mode, workers, setting), or null.
  const MeasuredPoint* find(const std::string& group, const std::string& mode, int workers,
                            const std::string& setting = "") const;
};

// `self` is this program's path (the DDP ranks run `self scaling-rank`). Progress lines go to stderr.
Measurements measure(const ScalingOptions& options, const std::string& self);

// Runs one DDP configuration as config.workers processes and merges their results.
RunResult run_ddp(const RunConfig& config, const std::string& self);

// Combines repeats: the steps pooled (medians per phase), samples/s the median run's, noise the larger of the
// pooled steps' spread and the repeats' spread, peaks the largest; the mean step, the rank skew and the
// threads' loads averaged, the replayed collectives' times their medians.
RunResult combine_repeats(const std::vector<RunResult>& repeats);

}  // namespace syncgrad::bench
