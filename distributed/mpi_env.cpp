// The MPI launchers' side of scheduler_env.h: Open MPI's mpirun (OMPI_COMM_WORLD_*) and PMI launchers such as
// MPICH's Hydra mpiexec (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS). Neither says which host runs
// rank 0: when every rank runs on this node it is 127.0.0.1, else MASTER_ADDR must be passed on (master_hint).
#include <string>

#include "distributed/env_values.h"
#include "distributed/errors.h"
#include "distributed/scheduler_env.h"
#include "tensor/check.h"

namespace syncgrad::distributed {
namespace {

using env_values::get;

struct Names {
  const char* source;
  const char* rank;
  const char* world;
  const char* launcher;  // for messages: who sets these variables
};

// Rank and world size from `names`; nullopt when neither variable is set.
std::optional<SchedulerPlacement> read_ranks(const Names& names) {
  std::optional<std::string> rank = get(names.rank);
  std::optional<std::string> world = get(names.world);
  if (!rank && !world) return std::nullopt;
  const std::string fix = std::string(names.launcher) + " sets it; unset it when the job is not started that way";
  SYNCGRAD_CHECK(rank && world, RendezvousError, rank ? names.world : names.rank, " is not set but ",
                 rank ? names.rank : names.world, "=", rank ? *rank : *world, " is; ", names.launcher,
                 " sets both: unset it when the job is not started that way");
  SchedulerPlacement p;
  p.source = names.source;
  p.rank_name = names.rank;
  p.world_name = names.world;
  p.world_size = env_values::count(names.world, *world, 1, fix);
  p.rank = env_values::count(names.rank, *rank, 0, fix);
  return p;
}

// The local rank and size from the first pair of variables set; when none is, p.unknown_local says so.
void read_local(SchedulerPlacement& p, const Names& names,
                std::initializer_list<std::pair<const char*, const char*>> local_names) {
  std::string tried;
  for (const auto& [local_name, local_world_name] : local_names) {
    std::optional<std::string> local = get(local_name);
    std::optional<std::string> local_world = get(local_world_name);
    tried += std::string(tried.empty() ? "" : " or ") + local_name + " and " + local_world_name;
    if (!local && !local_world) continue;
    const std::string fix = std::string(names.launcher) + " sets it to the rank's place on its node";
    SYNCGRAD_CHECK(local && local_world, RendezvousError, local ? local_world_name : local_name, " is not set but ",
                   local ? local_name : local_world_name, "=", local ? *local : *local_world, " is; ", fix);
    p.local_world_size = env_values::count(local_world_name, *local_world, 1, fix);
    p.local_rank = env_values::count(local_name, *local, 0, fix);
    env_values::check_placement(p.rank, p.world_size, p.local_rank, p.local_world_size, p.rank_name, p.world_name,
                                local_name, local_world_name);
    return;
  }
  p.unknown_local = std::string(names.rank) + "=" + std::to_string(p.rank) + " and " + names.world + "=" +
                    std::to_string(p.world_size) + " are set but not " + tried +
                    ", which say where this rank runs; start the job with " + names.launcher +
                    ", or export RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE yourself";
}

// 127.0.0.1 when every rank runs on this node; the port derived from the job id, else the default.
void settle_master(SchedulerPlacement& p, const std::optional<std::string>& job_id) {
  if (p.unknown_local.empty() && p.local_world_size == p.world_size) p.master_addr = "127.0.0.1";
  p.job_id = job_id.value_or("");
  p.master_port = p.job_id.empty() ? kDefaultMasterPort : derived_port(p.job_id);
}

}  // namespace

std::optional<SchedulerPlacement> read_openmpi() {
  const Names names{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"};
  std::optional<SchedulerPlacement> p = read_ranks(names);
  if (!p) return std::nullopt;
  read_local(*p, names, {{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}});
  std::optional<std::pair<std::string, std::string>> job =
      env_values::first_set({"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"});
  settle_master(*p, job ? std::optional<std::string>(job->second) : std::nullopt);
  p->master_hint =
      "pass it to every rank: mpirun -x MASTER_ADDR=<host of rank 0> -x MASTER_PORT=<a free port there> ...";
  return p;
}

std::optional<SchedulerPlacement> read_pmi() {
  const Names names{"pmi", "PMI_RANK", "PMI_SIZE", "the PMI launcher (e.g. MPICH's mpiexec)"};
  std::optional<SchedulerPlacement> p = read_ranks(names);
  if (!p) return std::nullopt;
  read_local(*p, names, {{"MPI_LOCALRANKID", "MPI_LOCALNRANKS"}, {"PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"}});
  std::optional<std::string> job = get("PMI_JOBID");
  settle_master(*p, job && !job->empty() ? job : std::nullopt);
  p->master_hint =
      "pass it to every rank: mpiexec -genv MASTER_ADDR <host of rank 0> -genv MASTER_PORT <a free port there> ...";
  return p;
}

}  // namespace syncgrad::distributed
