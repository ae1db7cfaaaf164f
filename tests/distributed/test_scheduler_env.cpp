// What srun, mpirun and PMI launchers say about a process (scheduler_env.h) and how read_launch_env() chooses
// among them: Slurm's node lists expanded as `scontrol show hostnames` does (the expected lists below are what
// Slurm 22.05's scontrol printed), the ports derived from job ids, Open MPI's and MPICH's variables (as the real
// mpirun and mpiexec set them), and the errors when torchrun-style variables disagree with a scheduler's.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "distributed/errors.h"
#include "distributed/launch_env.h"
#include "distributed/scheduler_env.h"
#include "distributed/slurm_nodelist.h"
#include "tests/check_error.h"
#include "tests/distributed/scoped_env.h"

using namespace syncgrad::distributed;
using syncgrad::testing::check_error;
using syncgrad::testing::ScopedEnv;
using Hosts = std::vector<std::string>;

namespace {

void expect_error(const std::map<std::string, std::string>& values, std::initializer_list<std::string> fragments,
                  bool require_master = false) {
  ScopedEnv env(values);
  check_error<RendezvousError>([&] { read_launch_env(require_master); }, fragments);
}

// Two ranks of `mpirun -np 2` on one machine (Open MPI 4.1), as rank `rank` sees them.
std::map<std::string, std::string> openmpi(int rank, int size = 2, int local_size = 2) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank % local_size)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(local_size)},
          {"OMPI_MCA_ess_base_jobid", "1545142273"},
          {"PMIX_NAMESPACE", "1545142273"}};
}

// A rank of MPICH's `mpiexec -np 2` (Hydra 4.0).
std::map<std::string, std::string> hydra(int rank, int size = 2, int local_size = 2) {
  return {{"PMI_RANK", std::to_string(rank)},
          {"PMI_SIZE", std::to_string(size)},
          {"MPI_LOCALRANKID", std::to_string(rank % local_size)},
          {"MPI_LOCALNRANKS", std::to_string(local_size)}};
}

std::map<std::string, std::string> with(std::map<std::string, std::string> a,
                                        const std::map<std::string, std::string>& b) {
  for (const auto& [name, value] : b) a[name] = value;
  return a;
}

// Task `rank` of `srun -n 4` over 2 nodes in job 42, step 0.
std::map<std::string, std::string> srun_task(int rank) {
  return {{"SLURM_PROCID", std::to_string(rank)}, {"SLURM_STEP_ID", "0"},          {"SLURM_JOB_ID", "42"},
          {"SLURM_STEP_NUM_TASKS", "4"},          {"SLURM_LOCALID", std::to_string(rank % 2)},
          {"SLURM_NODEID", std::to_string(rank / 2)},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}, {"SLURM_STEP_NODELIST", "node[01-02]"},
          {"SLURM_STEP_NUM_NODES", "2"}};
}

}  // namespace

TEST_CASE("Slurm node lists: expanded as scontrol show hostnames does") {
  CHECK(expand_slurm_nodelist("node[01-04,07]", "L") == Hosts{"node01", "node02", "node03", "node04", "node07"});
  CHECK(expand_slurm_nodelist("rack[1-2]-n[01-02]", "L") == Hosts{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"});
  CHECK(expand_slurm_nodelist("n[1-2][3-4]", "L") == Hosts{"n13", "n14", "n23", "n24"});
  CHECK(expand_slurm_nodelist("n[1-2]-[5-6]", "L") == Hosts{"n1-5", "n1-6", "n2-5", "n2-6"});
  CHECK(expand_slurm_nodelist("a[8-10]", "L") == Hosts{"a8", "a9", "a10"});  // padding: the first number's width
  CHECK(expand_slurm_nodelist("a[08-011]", "L") == Hosts{"a08", "a09", "a10", "a11"});
  CHECK(expand_slurm_nodelist("a[1-010]", "L").size() == 10);
  CHECK(expand_slurm_nodelist("a[1-010]", "L").back() == "a10");
  CHECK(expand_slurm_nodelist(",node1", "L") == Hosts{"node1"});
  CHECK(expand_slurm_nodelist("a b,c", "L") == Hosts{"a", "b", "c"});
  CHECK(expand_slurm_nodelist("a[0-0]", "L") == Hosts{"a0"});
  CHECK(expand_slurm_nodelist("a[1-2],a[1-2]", "L") == Hosts{"a1", "a2", "a1", "a2"});
  CHECK(expand_slurm_nodelist("[1-2]", "L") == Hosts{"1", "2"});
  CHECK(expand_slurm_nodelist("gpu[1-2]-ib,login", "L") == Hosts{"gpu1-ib", "gpu2-ib", "login"});
  CHECK(expand_slurm_nodelist("node-7.cluster", "L") == Hosts{"node-7.cluster"});
  CHECK(expand_slurm_nodelist("n[0-65535]", "L").size() == 65536);
  CHECK(first_slurm_host("rack[2-3]-n[05,07],gpu7", "L") == "rack2-n05");
}

TEST_CASE("Slurm node lists: malformed lists are named with what is wrong") {
  struct Bad {
    const char* list;
    const char* why;
  };
  for (const Bad& bad : {Bad{"a[3-1]", "runs backwards"}, Bad{"a[]", "not a number"}, Bad{"a[1,,2]", "not a number"},
                         Bad{"a[-1]", "not a number"}, Bad{"a[1-2]x[a]", "'a', which is not a number"},
                         Bad{"n[1a-3]", "'1a'"}, Bad{"a[1-2", "never closed"}, Bad{"node01-04]", "closes no '['"},
                         Bad{"a[[1]]", "do not nest"}, Bad{"", "names no host"}, Bad{" , ", "names no host"},
                         Bad{"n[1-65537]", "more than 65536 hosts"}, Bad{"n[0-256][0-255]", "more than 65536 hosts"},
                         Bad{"n[1234567890123456789]", "not a number"}}) {
    CAPTURE(bad.list);
    check_error<RendezvousError>([&] { expand_slurm_nodelist(bad.list, "SLURM_STEP_NODELIST"); },
                                 {"SLURM_STEP_NODELIST='" + std::string(bad.list) + "' is not a Slurm node list",
                                  bad.why, "node[01-04,07],gpu7"});
  }
  // The whole list is checked even when only its first host is wanted.
  check_error<RendezvousError>([] { first_slurm_host("good[1-2],bad[", "X"); }, {"X='good[1-2],bad['", "never closed"});
}

TEST_CASE("ports derived from job ids: stable, different for nearby jobs and steps, in the safe range") {
  CHECK(derived_port(42, 0) == derived_port(42, 0));
  CHECK(derived_port(42, 0) == kDerivedPortBase + 42);
  std::set<uint16_t> ports;
  for (uint64_t job = 1000000; job < 1000000 + kDerivedPortCount; ++job) ports.insert(derived_port(job, 0));
  CHECK(ports.size() == kDerivedPortCount);  // any 10000 consecutive jobs: all different
  std::set<uint16_t> steps;
  for (uint64_t step = 0; step < 103; ++step) steps.insert(derived_port(42, step));
  CHECK(steps.size() == 103);
  for (uint64_t job : {0ULL, 9999ULL, 10000ULL, 0xffffffffffffffffULL}) {
    for (uint64_t step : {0ULL, 0xfffffffbULL}) {
      CHECK(derived_port(job, step) >= kDerivedPortBase);
      CHECK(derived_port(job, step) < kDerivedPortBase + kDerivedPortCount);
    }
  }
  CHECK(kDerivedPortBase + kDerivedPortCount <= 32768);  // below Linux's ephemeral ports
  CHECK(derived_port("42") == derived_port(42, 0));
  CHECK(derived_port("prterun-host-123@1") == derived_port("prterun-host-123@1"));
  CHECK(derived_port("prterun-host-123@1") != derived_port("prterun-host-124@1"));
  CHECK(derived_port("prterun-host-123@1") >= kDerivedPortBase);
}

TEST_CASE("srun: the port from the job and step, the step's reserved port, or MASTER_PORT") {
  {
    ScopedEnv env(srun_task(2));
    LaunchEnv e = read_launch_env(true);
    CHECK(e.source == "slurm");
    CHECK(e.rank == 2);
    CHECK(e.world_size == 4);
    CHECK(e.local_rank == 0);
    CHECK(e.local_world_size == 2);
    CHECK(e.master_addr == "node01");
    CHECK(e.master_port == derived_port(42, 0));
    CHECK(e.job_id == "42.0");
  }
  {
    ScopedEnv env(with(srun_task(0), {{"SLURM_STEP_ID", "1"}}));
    CHECK(read_launch_env().master_port == derived_port(42, 1));
  }
  {
    ScopedEnv env(with(srun_task(0), {{"SLURM_STEP_RESV_PORTS", "12000-12001"}}));
    CHECK(read_launch_env().master_port == 12000);
  }
  {
    ScopedEnv env(with(srun_task(0), {{"SLURM_STEP_RESV_PORTS", "12000-12001"}, {"MASTER_PORT", "3000"}}));
    CHECK(read_launch_env().master_port == 3000);
  }
}

TEST_CASE("Open MPI's mpirun: ranks, local ranks, 127.0.0.1 on one node, the port from its job id") {
  {
    ScopedEnv env(openmpi(1));
    LaunchEnv e = read_launch_env(true);
    CHECK(e.source == "openmpi");
    CHECK(e.rank == 1);
    CHECK(e.world_size == 2);
    CHECK(e.local_rank == 1);
    CHECK(e.local_world_size == 2);
    CHECK(e.master_addr == "127.0.0.1");
    CHECK(e.master_port == derived_port("1545142273"));
    CHECK(e.job_id == "1545142273");
  }
  // Several nodes: mpirun does not say where rank 0 runs, and the error says how to pass it on.
  expect_error(openmpi(3, 4, 2), {"MASTER_ADDR is not set (openmpi, rank 3 of 4, 2 on this node)",
                                  "mpirun -x MASTER_ADDR=<host of rank 0> -x MASTER_PORT="},
               true);
  {
    ScopedEnv env(with(openmpi(3, 4, 2), {{"MASTER_ADDR", "node07"}}));
    LaunchEnv e = read_launch_env(true);
    CHECK(e.master_addr == "node07");
    CHECK(e.master_port == derived_port("1545142273"));
  }
  {
    ScopedEnv env(with(openmpi(0), {{"OMPI_MCA_ess_base_jobid", ""}, {"PMIX_NAMESPACE", ""}}));
    CHECK(read_launch_env().master_port == kDefaultMasterPort);
  }
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}}, {"OMPI_COMM_WORLD_SIZE is not set", "OMPI_COMM_WORLD_RANK=0"});
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
               {"not OMPI_COMM_WORLD_LOCAL_RANK and OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI's mpirun"});
  expect_error(with(openmpi(0), {{"OMPI_COMM_WORLD_SIZE", "x"}}), {"OMPI_COMM_WORLD_SIZE='x'"});
  expect_error(with(openmpi(0), {{"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}),
               {"OMPI_COMM_WORLD_LOCAL_RANK=2 is not below OMPI_COMM_WORLD_LOCAL_SIZE=2"});
}

TEST_CASE("PMI launchers (MPICH's mpiexec): ranks, local ranks and the hint for several nodes") {
  {
    ScopedEnv env(hydra(1));
    LaunchEnv e = read_launch_env(true);
    CHECK(e.source == "pmi");
    CHECK(e.rank == 1);
    CHECK(e.local_world_size == 2);
    CHECK(e.master_addr == "127.0.0.1");
    CHECK(e.master_port == kDefaultMasterPort);
    CHECK(e.job_id.empty());
  }
  {
    ScopedEnv env({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"PMI_LOCAL_RANK", "0"}, {"PMI_LOCAL_SIZE", "1"},
                   {"PMI_JOBID", "77.1"}});
    LaunchEnv e = read_launch_env();
    CHECK(e.local_world_size == 1);
    CHECK(e.master_addr.empty());
    CHECK(e.master_port == derived_port("77.1"));
    CHECK(e.job_id == "77.1");
  }
  expect_error(hydra(3, 4, 2), {"MASTER_ADDR is not set (pmi, rank 3 of 4", "-genv MASTER_ADDR <host of rank 0>"},
               true);
  expect_error({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}, {"PMI_RANK=0 and PMI_SIZE=2 are set but not MPI_LOCALRANKID"});
  expect_error(with(hydra(0), {{"MPI_LOCALNRANKS", ""}}), {"MPI_LOCALNRANKS=''"});
}

TEST_CASE("the source: MPI inside Slurm, srun --mpi=pmi2, syncgrad-launch's marked ranks") {
  {
    // mpirun in a batch script: the ranks on other nodes inherit SLURM_PROCID of mpirun's daemon's step.
    ScopedEnv env(with(openmpi(3, 4, 2), with(srun_task(1), {{"MASTER_ADDR", "node01"}})));
    LaunchEnv e = read_launch_env(true);
    CHECK(e.source == "openmpi");
    CHECK(e.rank == 3);
    CHECK(e.job_id == "1545142273");  // not the daemons' Slurm step, which ranks on mpirun's own node lack
  }
  {
    // srun --mpi=pmi2: PMI_RANK and PMI_SIZE agree with Slurm's, whose node list says more.
    ScopedEnv env(with(srun_task(2), {{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}}));
    LaunchEnv e = read_launch_env(true);
    CHECK(e.source == "slurm");
    CHECK(e.master_addr == "node01");
  }
  {
    ScopedEnv env(with(srun_task(3), {{"SYNCGRAD_LAUNCHER", "syncgrad-launch"}, {"RANK", "6"}, {"WORLD_SIZE", "8"}}));
    CHECK(read_launch_env().source == "syncgrad-launch");
  }
  {
    ScopedEnv env(with(srun_task(3), {{"RANK", "3"}, {"WORLD_SIZE", "4"}}));
    CHECK(read_launch_env().source == "torchrun-style environment");
  }
}

TEST_CASE("torchrun-style variables that disagree with a scheduler's are an error naming both") {
  expect_error(with(srun_task(0), {{"RANK", "1"}, {"WORLD_SIZE", "4"}}),
               {"RANK=1 but SLURM_PROCID=0 (WORLD_SIZE=4 and SLURM_STEP_NUM_TASKS=4)", "unset RANK and WORLD_SIZE",
                "unset SLURM_PROCID and SLURM_STEP_NUM_TASKS"});
  expect_error(with(srun_task(1), {{"RANK", "1"}, {"WORLD_SIZE", "2"}}),
               {"WORLD_SIZE=2 but SLURM_STEP_NUM_TASKS=4 (RANK=1 and SLURM_PROCID=1)", "slurm's"});
  expect_error(with(openmpi(1), {{"RANK", "0"}, {"WORLD_SIZE", "2"}}),
               {"RANK=0 but OMPI_COMM_WORLD_RANK=1", "openmpi's"});
  expect_error(with(hydra(1), {{"RANK", "0"}, {"WORLD_SIZE", "2"}}), {"RANK=0 but PMI_RANK=1"});
  // Ranks started by hand inside a one-task step (srun --pty bash) are that task's children: not compared.
  ScopedEnv env({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}, {"RANK", "1"},
                 {"WORLD_SIZE", "2"}});
  CHECK(read_launch_env().rank == 1);
}

TEST_CASE("read_slurm_step: the srun step syncgrad-launch lays its job over") {
  {
    ScopedEnv env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}});
    CHECK_FALSE(read_slurm_step());  // the batch script: no step
  }
  {
    ScopedEnv env(with(srun_task(3), {{"SLURM_STEP_RESV_PORTS", "12005,12007"}}));
    std::optional<SlurmStep> step = read_slurm_step();
    REQUIRE(step);
    CHECK(step->job_id == "42.0");
    CHECK(step->tasks == 4);
    CHECK(step->nodes == 2);
    CHECK(step->node_id == 1);
    CHECK(step->first_host == "node01");
    CHECK(step->port == 12005);
    CHECK(step->port_origin.find("SLURM_STEP_RESV_PORTS=12005,12007") != std::string::npos);
  }
  {
    ScopedEnv env({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "3"},
                   {"SLURM_STEP_NODELIST", "gpu[1-3]"}});
    CHECK(read_slurm_step()->nodes == 3);  // no node count: the hosts of the step's list
  }
  {
    ScopedEnv env(with(srun_task(0), {{"SLURM_STEP_NUM_NODES", "1"}, {"SLURM_NODEID", "1"}}));
    check_error<RendezvousError>([] { read_slurm_step(); }, {"SLURM_NODEID=1 is not below the step's 1 nodes"});
  }
}
