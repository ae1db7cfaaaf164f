// Test helper for the launch-environment tests: clears every variable read_launch_env() and the scheduler
// readers look at (so a test behaves the same under srun or mpirun), sets the given ones, and restores the
// caller's environment when it goes out of scope.
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace syncgrad::testing {

class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& values) {
    for (const char* name : kNames) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      unsetenv(name);
    }
    for (const auto& [name, value] : values) setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  static constexpr const char* kNames[] = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SYNCGRAD_STORE_TOKEN",
      "SYNCGRAD_STORE_SERVED", "SYNCGRAD_LAUNCHER", "SYNCGRAD_JOB_ID", "SYNCGRAD_TIMEOUT",
      "SYNCGRAD_RENDEZVOUS_TIMEOUT",
      // Slurm
      "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
      "SLURM_TASKS_PER_NODE", "SLURM_NODEID", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID",
      "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NUM_NODES", "SLURM_NNODES",
      "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NODELIST", "SLURM_STEP_RESV_PORTS",
      // Open MPI
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
      "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
      // PMI
      "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE", "PMI_JOBID"};
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace syncgrad::testing
