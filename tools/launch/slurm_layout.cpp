// Lays syncgrad-launch's job out over the srun step it runs in (see slurm_layout.h).
#include "tools/launch/slurm_layout.h"

#include "tensor/check.h"
#include "tools/launch/errors.h"

namespace syncgrad::launch {

void apply_slurm_step(const distributed::SlurmStep& step, const GivenLayout& given, LaunchOptions& options) {
  const std::string where = "Slurm job " + step.job_id + " runs " + std::to_string(step.tasks) + " task" +
                            (step.tasks == 1 ? "" : "s") + " on " + std::to_string(step.nodes) + " node" +
                            (step.nodes == 1 ? "" : "s") + " in this step";
  options.slurm_job = step.job_id;
  if (step.tasks != step.nodes) {
    const bool layout_given = given.nnodes && given.node_rank && (given.master_addr || *given.nnodes == 1) &&
                              (given.master_port || *given.nnodes == 1);
    SYNCGRAD_CHECK(layout_given, UsageError, where,
                   " (SLURM_STEP_NUM_TASKS, SLURM_STEP_NUM_NODES), but syncgrad-launch takes its layout from srun "
                   "only with one task per node: run srun --ntasks-per-node=1 syncgrad-launch ..., or pass "
                   "--nnodes, --node-rank, --master-addr and --master-port yourself");
    options.nnodes = *given.nnodes;
    options.node_rank = *given.node_rank;
    return;
  }
  SYNCGRAD_CHECK(!given.nnodes || *given.nnodes == step.nodes, UsageError, "--nnodes ", given.nnodes.value_or(0),
                 " contradicts Slurm: ", where, " (SLURM_STEP_NUM_NODES=", step.nodes,
                 "), one syncgrad-launch each; leave --nnodes out to take it from Slurm, or start the step with "
                 "srun --nodes=", given.nnodes.value_or(0), " --ntasks-per-node=1");
  SYNCGRAD_CHECK(!given.node_rank || *given.node_rank == step.node_id, UsageError, "--node-rank ",
                 given.node_rank.value_or(0), " contradicts Slurm: this launcher runs on node ", step.node_id,
                 " of the step (SLURM_NODEID=", step.node_id, "); leave --node-rank out to take it from Slurm");
  options.nnodes = step.nodes;
  options.node_rank = step.node_id;
  if (options.nnodes == 1) return;  // one node: 127.0.0.1 and a free port, as without Slurm
  std::string derived;
  if (!given.nnodes) derived += " --nnodes " + std::to_string(options.nnodes);
  if (!given.node_rank) derived += " --node-rank " + std::to_string(options.node_rank);
  if (!given.master_addr) {
    SYNCGRAD_CHECK(!step.first_host.empty(), UsageError, where,
                   " but names no node (SLURM_STEP_NODELIST and SLURM_JOB_NODELIST are not set); pass --master-addr "
                   "<host of node 0>");
    options.master_addr = step.first_host;
    derived += " --master-addr " + step.first_host + " (the step's first node)";
  }
  if (!given.master_port) {
    options.master_port = step.port;
    derived += " --master-port " + std::to_string(step.port) + " (" + step.port_origin + ")";
  }
  if (!derived.empty()) options.layout_note = "from Slurm job " + step.job_id + ":" + derived;
}

}  // namespace syncgrad::launch
