// syncgrad-launch under srun, one launcher per node (srun --ntasks-per-node=1 syncgrad-launch --nproc-per-node
// N PROGRAM): the flags not given -- --nnodes, --node-rank, --master-addr, --master-port -- come from the Slurm
// step (the step's node count, SLURM_NODEID, the step's first node, and the step's reserved port or one derived
// from its job and step id); a flag given wins, except that --nnodes and --node-rank must match the step.
#pragma once

#include <optional>
#include <string>

#include "distributed/scheduler_env.h"
#include "tools/launch/options.h"

namespace syncgrad::launch {

// The flags that take part, as given on the command line (nullopt / empty: not given), already checked.
struct GivenLayout {
  std::optional<int> nnodes;
  std::optional<int> node_rank;
  bool master_addr = false;
  bool master_port = false;
};

// Completes `options` from `step`. UsageError when a given --nnodes or --node-rank contradicts the step (naming
// both), or when the step runs several tasks per node and the flags do not say the layout themselves. Sets
// options.slurm_job and, when it derived anything for a job of several nodes, options.layout_note.
void apply_slurm_step(const distributed::SlurmStep& step, const GivenLayout& given, LaunchOptions& options);

}  // namespace syncgrad::launch
