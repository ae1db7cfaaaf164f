// The environment one rank starts with: the launcher's own, plus the variables torchrun sets, the job's store
// coordinates, its id and timeouts (read back by distributed/launch_env.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/launch/options.h"

namespace syncgrad::launch {

struct StoreAddress {
  std::string host;
  uint16_t port = 0;
  std::string token;
};

// `base` is "NAME=value" entries (the launcher's environ). Sets RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR,
// MASTER_PORT, SYNCGRAD_STORE_TOKEN, SYNCGRAD_STORE_SERVED=1, SYNCGRAD_JOB_ID=job_id (unless empty),
// SYNCGRAD_LAUNCHER=syncgrad-launch (the mark by which read_launch_env() takes RANK and friends as the launcher's
// and leaves the SLURM_* or OMPI_* variables of the launcher's own srun or mpirun task, which the rank inherits
// unchanged, alone),
// SYNCGRAD_RESTART_COUNT=restart_count (the attempt: 0 on the first, see --max-restarts),
// SYNCGRAD_TIMEOUT and SYNCGRAD_RENDEZVOUS_TIMEOUT when options give them, and OMP_NUM_THREADS=1 unless base
// sets it.
std::vector<std::string> rank_environment(const std::vector<std::string>& base, const LaunchOptions& options,
                                          int local_rank, const StoreAddress& store, const std::string& job_id = {},
                                          int restart_count = 0);

// The calling process's environment as "NAME=value" entries.
std::vector<std::string> current_environment();

}  // namespace syncgrad::launch
