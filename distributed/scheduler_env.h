// What the schedulers and MPI launchers people already use say about this process: Slurm's srun (SLURM_*),
// Open MPI's mpirun (OMPI_COMM_WORLD_*) and PMI launchers such as MPICH's and Intel MPI's mpiexec (PMI_RANK,
// PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS). read_launch_env() (launch_env.h) chooses among them and the
// torchrun-style variables; syncgrad-launch reads read_slurm_step() to lay its job out over srun's tasks.
// Every malformed value is a RendezvousError naming the variable, its value and the fix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace syncgrad::distributed {

// Where one launcher places this process.
struct SchedulerPlacement {
  std::string source;  // "slurm", "openmpi" or "pmi"
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string rank_name;   // the variables rank and world_size came from, for messages
  std::string world_name;
  // The host of rank 0: 127.0.0.1 when every rank runs on this node, the first host of Slurm's node list,
  // else "" (mpirun and mpiexec do not say; master_hint says how to pass MASTER_ADDR).
  std::string master_addr;
  // Slurm: the step's first reserved port (SLURM_STEP_RESV_PORTS), else derived from the job and step id;
  // MPI: derived from the launcher's job id; else kDefaultMasterPort. (MASTER_PORT, when set, wins over it.)
  uint16_t master_port = 0;
  std::string job_id;       // "42.3" (Slurm job 42, step 3), Open MPI's job id, PMI_JOBID; "" when none
  std::string master_hint;  // how to give every rank MASTER_ADDR and MASTER_PORT with this launcher
  // Not empty when the launcher does not say where the rank runs (a PMI launcher without MPI_LOCALRANKID): the
  // error to raise when this placement is used (under Slurm's --mpi=pmi2 Slurm's own variables say it).
  std::string unknown_local;
};

// The port used when nothing names or derives one (torchrun's default).
inline constexpr uint16_t kDefaultMasterPort = 29500;
// Ports derived from a job id lie in [kDerivedPortBase, kDerivedPortBase + kDerivedPortCount): below Linux's
// ephemeral range (32768-60999), so no outgoing connection on the node holds one by chance.
inline constexpr uint16_t kDerivedPortBase = 20000;
inline constexpr uint16_t kDerivedPortCount = 10000;

// A port for Slurm job `job`, step `step`: kDerivedPortBase + (job + 97 * step) mod kDerivedPortCount, so jobs
// whose numbers differ by less than kDerivedPortCount (and the first 103 steps of one job) get different ports.
uint16_t derived_port(uint64_t job, uint64_t step);
// A port for a launcher's job id: derived_port(id, 0) for a decimal number, else a hash of the text.
uint16_t derived_port(std::string_view job_id);

// A task started by srun: SLURM_PROCID together with SLURM_STEP_ID (Slurm's batch script and salloc's shell
// have SLURM_PROCID=0 but no step id: they are one process, not a rank of the allocation). Rank from
// SLURM_PROCID, world size from SLURM_STEP_NUM_TASKS (else SLURM_NTASKS, SLURM_NPROCS), local rank from
// SLURM_LOCALID, local size from this node's entry of SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE,
// SLURM_NTASKS_PER_NODE), rank 0's host from SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST, SLURM_NODELIST).
std::optional<SchedulerPlacement> read_slurm_task();

// Ranks started by Open MPI's mpirun or mpiexec: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK and _LOCAL_SIZE;
// the job id OMPI_MCA_ess_base_jobid (else PMIX_NAMESPACE).
std::optional<SchedulerPlacement> read_openmpi();

// Ranks started by a PMI launcher (MPICH's or Intel MPI's mpiexec, Slurm's --mpi=pmi2): PMI_RANK and PMI_SIZE,
// with the local rank and size from MPI_LOCALRANKID and MPI_LOCALNRANKS (else PMI_LOCAL_RANK, PMI_LOCAL_SIZE;
// neither set: unknown_local); the job id PMI_JOBID when set.
std::optional<SchedulerPlacement> read_pmi();

// The srun step this process is a task of, as syncgrad-launch lays a job out over it (one launcher per node).
struct SlurmStep {
  std::string job_id;      // "42.3": SLURM_JOB_ID and SLURM_STEP_ID
  int tasks = 1;           // SLURM_STEP_NUM_TASKS (else SLURM_NTASKS)
  int nodes = 1;           // SLURM_STEP_NUM_NODES (else SLURM_NNODES, else the hosts of SLURM_STEP_NODELIST)
  int node_id = 0;         // SLURM_NODEID: this node's index in the step
  std::string first_host;  // the step's first node: where node 0, and so the store, runs
  uint16_t port = 0;       // as SchedulerPlacement::master_port for Slurm
  std::string port_origin;  // where the port came from, e.g. "derived from job 42 step 3"
};

// The srun step of this process; nullopt outside one (no SLURM_STEP_ID or no SLURM_PROCID).
std::optional<SlurmStep> read_slurm_step();

}  // namespace syncgrad::distributed
