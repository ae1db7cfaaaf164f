// `syncgrad-bench scaling`: measure, analyse, print, write the files. Also the hidden `scaling-rank`
// subcommand that each DDP rank runs.
#pragma once

#include <string>

#include "bench/scaling/scaling_options.h"

namespace syncgrad::bench {

// Returns the exit status (0; errors are thrown). `self` is this program's path.
int run_scaling(const ScalingOptions& options, const std::string& self);

// One DDP rank: reads the RunConfig from config_path, writes its result into out_dir.
int run_scaling_rank(const std::string& config_path, const std::string& out_dir);

}  // namespace syncgrad::bench
