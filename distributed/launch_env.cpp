// read_launch_env(): where this process sits in the job, from the variables syncgrad-launch and torchrun
// set (RANK, WORLD_SIZE, ...) or, without them, from what srun, mpirun or a PMI launcher set
// (scheduler_env.h). Every malformed or inconsistent value is a RendezvousError naming the variable, its value
// and the fix; so are torchrun-style variables that disagree with a scheduler's.
#include "distributed/launch_env.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "distributed/env_values.h"
#include "distributed/errors.h"
#include "distributed/scheduler_env.h"
#include "tensor/check.h"

namespace syncgrad::distributed {
namespace {

using env_values::get;

constexpr const char* kLauncherSource = "syncgrad-launch";
constexpr const char* kTorchrunSource = "torchrun-style environment";

bool read_flag(const char* name) {
  std::optional<std::string> value = get(name);
  if (!value || value->empty() || *value == "0") return false;
  if (*value == "1") return true;
  throw RendezvousError(std::string(name) + "='" + *value + "' is neither 0 nor 1; unset it or set " + name +
                        "=1 only when the launcher serves the job's store");
}

// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE as syncgrad-launch or torchrun set them (`source`).
LaunchEnv read_launcher_env(const char* source) {
  LaunchEnv e;
  e.source = source;
  std::optional<std::string> rank = get("RANK");
  std::optional<std::string> world = get("WORLD_SIZE");
  if (!rank || !world) {
    SYNCGRAD_CHECK(rank || world, RendezvousError,
                   "SYNCGRAD_LAUNCHER=syncgrad-launch is set but RANK and WORLD_SIZE are not; syncgrad-launch sets "
                   "them all for its ranks: unset SYNCGRAD_LAUNCHER outside them");
    const char* missing = rank ? "WORLD_SIZE" : "RANK";
    const char* present = rank ? "RANK" : "WORLD_SIZE";
    throw RendezvousError(std::string(missing) + " is not set but " + present + "=" + (rank ? *rank : *world) +
                          " is; export both (RANK in 0..WORLD_SIZE-1), or start the job with syncgrad-launch, "
                          "which sets them");
  }
  e.world_size = env_values::count("WORLD_SIZE", *world, 1, "set it to the number of processes in the job");
  e.rank = env_values::count("RANK", *rank, 0, "set it to this process's rank, 0 .. WORLD_SIZE-1");
  // A job started by hand on one machine may leave out the local variables: then local = global.
  e.local_rank = env_values::optional_count("LOCAL_RANK", 0, "set it to this process's index on its node")
                     .value_or(e.rank);
  e.local_world_size =
      env_values::optional_count("LOCAL_WORLD_SIZE", 1, "set it to the number of processes on this node")
          .value_or(e.world_size);
  env_values::check_placement(e.rank, e.world_size, e.local_rank, e.local_world_size, "RANK", "WORLD_SIZE",
                              "LOCAL_RANK", "LOCAL_WORLD_SIZE");
  return e;
}

// torchrun-style variables beside a scheduler's that place this process elsewhere: left over in a job script
// or a shell (e.g. RANK=0 exported before srun), so this rank would collide with another. A scheduler job of one
// task (srun --pty bash, mpirun -np 1) is not compared: processes started by hand inside it are its children.
void check_agrees(const LaunchEnv& e, const std::optional<SchedulerPlacement>& p) {
  if (!p || p->world_size == 1 || (p->rank == e.rank && p->world_size == e.world_size)) return;
  const bool rank_differs = p->rank != e.rank;
  const std::string ranks = "RANK=" + std::to_string(e.rank) + (rank_differs ? " but " : " and ") + p->rank_name +
                            "=" + std::to_string(p->rank);
  const std::string sizes = "WORLD_SIZE=" + std::to_string(e.world_size) + (rank_differs ? " and " : " but ") +
                            p->world_name + "=" + std::to_string(p->world_size);
  throw RendezvousError((rank_differs ? ranks + " (" + sizes : sizes + " (" + ranks) +
                        "): this process has torchrun-style variables and " + p->source +
                        "'s, and they disagree; unset RANK and WORLD_SIZE (left exported in the job script or the "
                        "shell?) to use " + p->source + "'s, or unset " + p->rank_name + " and " + p->world_name +
                        " to use them (syncgrad-launch's own ranks are marked and never compared)");
}

// The scheduler or MPI launcher that placed this process: an MPI launcher's variables win over Slurm's when they
// differ, since mpirun runs inside the allocation and its ranks inherit the variables of the batch script or of
// the srun step of mpirun's own daemons; when they agree (srun --mpi=pmi2), Slurm's say more (the node list).
std::optional<SchedulerPlacement> placement() {
  std::optional<SchedulerPlacement> slurm = read_slurm_task();
  std::optional<SchedulerPlacement> mpi = read_openmpi();
  if (!mpi) mpi = read_pmi();
  if (!mpi || (slurm && slurm->rank == mpi->rank && slurm->world_size == mpi->world_size)) return slurm;
  if (!mpi->unknown_local.empty()) throw RendezvousError(mpi->unknown_local);
  return mpi;
}

LaunchEnv from_placement(const SchedulerPlacement& p) {
  LaunchEnv e;
  e.source = p.source;
  e.rank = p.rank;
  e.world_size = p.world_size;
  e.local_rank = p.local_rank;
  e.local_world_size = p.local_world_size;
  e.master_addr = p.master_addr;
  e.master_port = p.master_port;
  e.job_id = p.job_id;
  e.master_hint = p.master_hint;
  return e;
}

// SYNCGRAD_JOB_ID, else Slurm's job (and step) id, else "".
std::string read_job_id() {
  if (std::optional<std::string> id = get("SYNCGRAD_JOB_ID"); id && !id->empty()) return *id;
  std::optional<std::string> slurm = get("SLURM_JOB_ID");
  if (!slurm || slurm->empty()) return "";
  std::optional<std::string> step = get("SLURM_STEP_ID");
  return step && !step->empty() ? *slurm + "." + *step : *slurm;
}

std::optional<std::chrono::milliseconds> read_timeout(const char* name, const char* flag) {
  std::optional<std::string> value = get(name);
  if (!value) return std::nullopt;
  std::optional<std::chrono::milliseconds> timeout = parse_timeout_seconds(*value);
  SYNCGRAD_CHECK(timeout, RendezvousError, name, "='", *value, "' is not ", timeout_range_text(),
                 "; unset it or set it like syncgrad-launch ", flag, " does, e.g. ", name, "=600");
  return timeout;
}

}  // namespace

std::string timeout_range_text() { return "a number of seconds from 0.001 to 604800 (one week)"; }

std::optional<std::chrono::milliseconds> parse_timeout_seconds(std::string_view text) {
  double seconds = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, seconds);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(seconds) || seconds < kMinTimeoutSeconds ||
      seconds > kMaxTimeoutSeconds) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

LaunchEnv read_launch_env(bool require_master) {
  LaunchEnv e;
  if (std::optional<std::string> launcher = get("SYNCGRAD_LAUNCHER")) {
    SYNCGRAD_CHECK(*launcher == kLauncherSource, RendezvousError, "SYNCGRAD_LAUNCHER='", *launcher,
                   "' is not syncgrad-launch, the one launcher that sets it for its ranks; unset it");
    e = read_launcher_env(kLauncherSource);
  } else if (get("RANK") || get("WORLD_SIZE")) {
    e = read_launcher_env(kTorchrunSource);
    check_agrees(e, read_slurm_task());
    check_agrees(e, read_openmpi());
    check_agrees(e, read_pmi());
  } else if (std::optional<SchedulerPlacement> p = placement()) {
    e = from_placement(*p);
  } else {
    e.source = "defaults";
  }
  if (std::optional<std::string> addr = get("MASTER_ADDR"); addr && !addr->empty()) e.master_addr = *addr;
  if (std::optional<std::string> port = get("MASTER_PORT")) e.master_port = env_values::port("MASTER_PORT", *port);
  e.store_token = get("SYNCGRAD_STORE_TOKEN").value_or("");
  e.store_served = read_flag("SYNCGRAD_STORE_SERVED");
  if (std::optional<std::string> id = get("SYNCGRAD_JOB_ID"); id && !id->empty()) e.job_id = *id;
  if (e.job_id.empty() && e.source != "openmpi" && e.source != "pmi") e.job_id = read_job_id();
  e.timeout = read_timeout("SYNCGRAD_TIMEOUT", "--timeout");
  e.rendezvous_timeout = read_timeout("SYNCGRAD_RENDEZVOUS_TIMEOUT", "--rendezvous-timeout");
  if (require_master) {
    const std::string hint = e.master_hint.empty()
                                 ? "export MASTER_ADDR=<that host> or start the job with syncgrad-launch, which sets it"
                                 : e.master_hint;
    SYNCGRAD_CHECK(!e.master_addr.empty(), RendezvousError, "MASTER_ADDR is not set (", e.source, ", rank ", e.rank,
                   " of ", e.world_size, ", ", e.local_world_size,
                   " on this node); env:// needs the host of rank 0: ", hint);
    SYNCGRAD_CHECK(e.master_port != 0, RendezvousError, "MASTER_PORT is not set (", e.source,
                   ", MASTER_ADDR=", e.master_addr,
                   "); env:// needs the port of the job's store: export MASTER_PORT=<a free port, e.g. 29500> on every "
                   "rank, or start the job with syncgrad-launch, which sets it");
  }
  return e;
}

bool launched_distributed() { return read_launch_env().world_size > 1; }

}  // namespace syncgrad::distributed
