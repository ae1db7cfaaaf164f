// LaunchEnv: where this process sits in the job, read from the environment of whatever started it:
//   - syncgrad-launch, whose ranks carry SYNCGRAD_LAUNCHER=syncgrad-launch beside RANK, WORLD_SIZE, LOCAL_RANK,
//     LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, SYNCGRAD_STORE_TOKEN and SYNCGRAD_STORE_SERVED; the scheduler
//     variables they inherit from the launcher's own srun or mpirun task are not read;
//   - torchrun or variables exported by hand (the same names without the mark), which must agree on the rank and
//     world size with the variables of srun, mpirun or a PMI launcher when those are set too;
//   - else srun, mpirun or a PMI launcher (scheduler_env.h), an MPI launcher's variables winning over Slurm's
//     when they differ (mpirun inside an allocation);
//   - else the defaults of a single process.
// MASTER_ADDR and MASTER_PORT, when set, win over what a scheduler implies. Also the job's identity
// (SYNCGRAD_JOB_ID, else the scheduler's: SLURM_JOB_ID[.SLURM_STEP_ID], Open MPI's job id, PMI_JOBID) and the
// timeouts syncgrad-launch --timeout / --rendezvous-timeout export (SYNCGRAD_TIMEOUT, SYNCGRAD_RENDEZVOUS_TIMEOUT,
// in seconds), which init_process_group() applies unless the program set its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace syncgrad::distributed {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr;   // empty when not set (world size 1 needs none)
  uint16_t master_port = 0;  // 0 when not set
  std::string store_token;   // the job's store token ("" when the job has none)
  bool store_served = false;  // the launcher serves the TCPStore, so rank 0 connects as a client
  // "syncgrad-launch", "torchrun-style environment", "slurm", "openmpi", "pmi" or "defaults"
  std::string source;
  std::string job_id;         // SYNCGRAD_JOB_ID, else the scheduler's job id (see above), else ""
  std::string master_hint;    // how to pass MASTER_ADDR with the launcher that started this process ("" if none)
  std::optional<std::chrono::milliseconds> timeout;             // SYNCGRAD_TIMEOUT: collectives
  std::optional<std::chrono::milliseconds> rendezvous_timeout;  // SYNCGRAD_RENDEZVOUS_TIMEOUT: joining the job
};

// Timeouts given in seconds (flags and the variables above) lie in [kMinTimeoutSeconds, kMaxTimeoutSeconds].
inline constexpr double kMinTimeoutSeconds = 0.001;
inline constexpr double kMaxTimeoutSeconds = 604800;  // one week
// "a number of seconds from 0.001 to 604800 (one week)", for messages about a bad timeout.
std::string timeout_range_text();
// A whole string holding a number of seconds in that range (e.g. "600", "2.5", "1e3"), rounded to the
// millisecond; nullopt for anything else ("0", "-1", "nan", "inf", "1e30", "abc", "", " 5").
std::optional<std::chrono::milliseconds> parse_timeout_seconds(std::string_view text);

// Reads the environment. Malformed or inconsistent values (RANK >= WORLD_SIZE, a port outside 1..65535,
// a non-number, RANK=1 beside SLURM_PROCID=0) are RendezvousErrors naming the variables, their values and the
// fix. `require_master` also demands MASTER_ADDR and MASTER_PORT (env:// with world size > 1) and names the
// missing variable, with the way to pass it on under the launcher that started the job (master_hint).
LaunchEnv read_launch_env(bool require_master = false);

// True when the environment describes a job of more than one process.
bool launched_distributed();

}  // namespace syncgrad::distributed
