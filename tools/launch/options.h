// syncgrad-launch's command line: the flags as typed (LaunchFlags, filled by CLI11) and the checked,
// completed settings the launcher runs with (LaunchOptions).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distributed/scheduler_env.h"

namespace syncgrad::launch {

// The flags as strings, so that every bad value gets a message naming it and a hint.
struct LaunchFlags {
  std::string nproc_per_node = "1";
  std::string nnodes;     // "": 1, or the srun step's node count
  std::string node_rank;  // "": 0, or SLURM_NODEID
  std::string master_addr;
  std::string master_port;
  std::string grace_period = "5";
  std::string max_restarts = "0";
  std::optional<std::string> token;
  std::optional<std::string> timeout;
  std::optional<std::string> rendezvous_timeout;
};

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;      // --nnodes N, or MAX of --nnodes MIN:MAX
  int min_nnodes = 0;  // MIN of --nnodes MIN:MAX (elastic); 0: a fixed nnodes
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 0;                      // 0: node 0 serves the store on a free port (one node only)
  std::chrono::milliseconds grace_period{5000};  // between SIGTERM and SIGKILL when stopping the ranks
  int max_restarts = 0;                          // times all ranks (of all nodes) are started again after a failure
  std::optional<std::string> token;              // --token
  // --timeout / --rendezvous-timeout in seconds as given (checked), exported to the ranks as SYNCGRAD_TIMEOUT /
  // SYNCGRAD_RENDEZVOUS_TIMEOUT; unset: the ranks keep what the launcher's environment says, else their defaults.
  std::optional<std::string> timeout;
  std::optional<std::string> rendezvous_timeout;
  std::vector<std::string> command;              // PROGRAM ARGS...
  // Under srun: the step ("42.3", Slurm job 42 step 3) whose tasks are this job's nodes; the job's id, and its
  // token unless one is given (see token.h). layout_note: the flags taken from the step, for the launcher to say.
  std::optional<std::string> slurm_job;
  std::string layout_note;

  int world_size() const { return nproc_per_node * nnodes; }
  int min_nodes() const { return min_nnodes > 0 ? min_nnodes : nnodes; }
  bool elastic() const { return min_nodes() < nnodes; }
  // The nodes' launchers agree on every attempt through the store (tools/launch/multinode_job.h): several
  // nodes with restarts, or an elastic job.
  bool coordinated() const { return nnodes > 1 && (max_restarts > 0 || elastic()); }
};

// Declares the flags on `app` (which stops parsing at PROGRAM: everything from there on is the command).
void add_flags(CLI::App& app, LaunchFlags& flags);

// Checks the parsed flags and the command (app.remaining()); UsageError names the bad value and a fix. Inside an
// srun step (`slurm`, from distributed::read_slurm_step()) the layout flags not given come from it
// (slurm_layout.h).
LaunchOptions check_flags(const LaunchFlags& flags, std::vector<std::string> command,
                          const std::optional<distributed::SlurmStep>& slurm = std::nullopt);

}  // namespace syncgrad::launch
