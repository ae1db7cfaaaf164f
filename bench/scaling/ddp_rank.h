// One rank of a measured DistributedDataParallel run: joins the job syncgrad-bench started (torchrun's
// environment), trains config.steps steps on synthetic data with one compute thread, optionally times
// allreduce over a range of sizes, and writes its results to OUT_DIR/rank<R>.json for the bench to read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/scaling/run_config.h"

namespace syncgrad::bench {

void run_ddp_rank(const RunConfig& config, const std::string& out_dir);

// The path rank `rank` writes to.
std::string rank_result_path(const std::string& out_dir, int rank);

// Merges the ranks' files into one RunResult (steps of all ranks, rank 0's wall time and sweep, the rank skew
// of their steps taken pairwise).
RunResult merge_rank_results(const RunConfig& config, const std::vector<nlohmann::json>& ranks);

}  // namespace syncgrad::bench
