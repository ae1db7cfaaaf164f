// LaunchEnv: where this process sits in the job, read from the environment that syncgrad-launch (or
// torchrun) sets -- RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// SYNCGRAD_STORE_TOKEN, SYNCGRAD_STORE_SERVED -- or, without them, from Slurm's SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID, SLURM_NTASKS_PER_NODE / SLURM_TASKS_PER_NODE and the first host of SLURM_JOB_NODELIST.
// Either way also the job's identity (SYNCGRAD_JOB_ID, else Slurm's SLURM_JOB_ID[.SLURM_STEP_ID]) and the
// timeouts syncgrad-launch --timeout / --rendezvous-timeout export (SYNCGRAD_TIMEOUT,
// SYNCGRAD_RENDEZVOUS_TIMEOUT, in seconds), which init_process_group() applies unless the program set its own.
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
  std::string source;         // "syncgrad-launch/torchrun environment", "Slurm" or "defaults"
  std::string job_id;         // SYNCGRAD_JOB_ID, else SLURM_JOB_ID (".SLURM_STEP_ID" when set), else ""
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
// a non-number) are RendezvousErrors naming the variable, its value and the fix. `require_master` also
// demands MASTER_ADDR and MASTER_PORT (env:// with world size > 1) and names the missing variable.
LaunchEnv read_launch_env(bool require_master = false);

// True when the environment describes a job of more than one process.
bool launched_distributed();

}  // namespace syncgrad::distributed
