// syncgrad-launch under srun: the layout flags not given come from the step (one launcher per node), flags given
// win or, for --nnodes and --node-rank, must match the step; the ranks are marked; the token and job id follow the
// step. (Part of the test_launch_parts executable.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "distributed/scheduler_env.h"
#include "tests/check_error.h"
#include "tools/launch/errors.h"
#include "tools/launch/options.h"
#include "tools/launch/rank_env.h"
#include "tools/launch/token.h"

using namespace syncgrad::launch;
using syncgrad::distributed::SlurmStep;
using syncgrad::testing::check_error;

namespace {

// Node `node` of job 42's step 3, on node[01-02] (`tasks` tasks).
SlurmStep step(int node, int nodes = 2, int tasks = 2) {
  SlurmStep s;
  s.job_id = "42.3";
  s.tasks = tasks;
  s.nodes = nodes;
  s.node_id = node;
  s.first_host = "node01";
  s.port = 20333;
  s.port_origin = "derived from job 42 step 3";
  return s;
}

LaunchFlags two_per_node() {
  LaunchFlags f;
  f.nproc_per_node = "2";
  return f;
}

// Restores an environment variable the test changes.
class SavedVariable {
 public:
  explicit SavedVariable(const char* name) : name_(name) {
    const char* value = std::getenv(name);
    if (value != nullptr) saved_ = value;
    unsetenv(name);
  }
  ~SavedVariable() {
    if (saved_) {
      setenv(name_, saved_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  SavedVariable(const SavedVariable&) = delete;
  SavedVariable& operator=(const SavedVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

}  // namespace

TEST_CASE("under srun: --nnodes, --node-rank, --master-addr and --master-port from the step") {
  LaunchOptions o = check_flags(two_per_node(), {"prog"}, step(1));
  CHECK(o.nnodes == 2);
  CHECK(o.node_rank == 1);
  CHECK(o.world_size() == 4);
  CHECK(o.master_addr == "node01");
  CHECK(o.master_port == 20333);
  CHECK(o.slurm_job == "42.3");
  CHECK(o.layout_note == "from Slurm job 42.3: --nnodes 2 --node-rank 1 --master-addr node01 (the step's first node) "
                         "--master-port 20333 (derived from job 42 step 3)");
  // Given flags win; the note names only what was taken from Slurm.
  LaunchFlags f = two_per_node();
  f.master_addr = "10.0.0.9";
  f.master_port = "29999";
  f.nnodes = "2";
  f.node_rank = "1";
  o = check_flags(f, {"prog"}, step(1));
  CHECK(o.master_addr == "10.0.0.9");
  CHECK(o.master_port == 29999);
  CHECK(o.layout_note.empty());
  // One node: 127.0.0.1 and a free port, as without Slurm.
  o = check_flags(two_per_node(), {"prog"}, step(0, 1, 1));
  CHECK(o.nnodes == 1);
  CHECK(o.master_addr == "127.0.0.1");
  CHECK(o.master_port == 0);
  CHECK(o.layout_note.empty());
  // Outside srun nothing changes.
  o = check_flags(two_per_node(), {"prog"});
  CHECK(o.nnodes == 1);
  CHECK_FALSE(o.slurm_job);
}

TEST_CASE("under srun: flags that contradict the step, and several tasks per node") {
  LaunchFlags f = two_per_node();
  f.nnodes = "3";
  check_error<UsageError>([&] { check_flags(f, {"prog"}, step(0)); },
                          {"--nnodes 3 contradicts Slurm: Slurm job 42.3 runs 2 tasks on 2 nodes in this step",
                           "SLURM_STEP_NUM_NODES=2", "leave --nnodes out", "srun --nodes=3 --ntasks-per-node=1"});
  f = two_per_node();
  f.node_rank = "0";
  check_error<UsageError>([&] { check_flags(f, {"prog"}, step(1)); },
                          {"--node-rank 0 contradicts Slurm", "node 1 of the step (SLURM_NODEID=1)"});
  check_error<UsageError>([&] { check_flags(two_per_node(), {"prog"}, step(0, 2, 4)); },
                          {"runs 4 tasks on 2 nodes", "srun --ntasks-per-node=1 syncgrad-launch",
                           "pass --nnodes, --node-rank, --master-addr and --master-port yourself"});
  f = two_per_node();
  f.nnodes = "4";
  f.node_rank = "3";
  f.master_addr = "node01";
  f.master_port = "29500";
  LaunchOptions o = check_flags(f, {"prog"}, step(1, 2, 4));  // the user lays the job out: allowed
  CHECK(o.nnodes == 4);
  CHECK(o.node_rank == 3);
  SlurmStep nameless = step(0);
  nameless.first_host.clear();
  check_error<UsageError>([&] { check_flags(two_per_node(), {"prog"}, nameless); },
                          {"names no node", "pass --master-addr"});
}

TEST_CASE("under srun: the ranks are marked, the token and the job id follow the step") {
  SavedVariable token("SYNCGRAD_STORE_TOKEN");
  SavedVariable id("SYNCGRAD_JOB_ID");
  LaunchOptions o = check_flags(two_per_node(), {"prog"}, step(1));
  CHECK(job_token(o) == "slurm-42.3");
  CHECK(job_id(job_token(o), o.slurm_job) == "42.3");
  setenv("SYNCGRAD_STORE_TOKEN", "secret", 1);
  CHECK(job_token(o) == "secret");
  setenv("SYNCGRAD_JOB_ID", "mine", 1);
  CHECK(job_id("secret", o.slurm_job) == "mine");
  const std::vector<std::string> env =
      rank_environment({"SLURM_PROCID=1", "SLURM_NTASKS=2"}, o, 1, {"node01", 20333, "t"}, "42.3");
  for (const char* entry : {"SYNCGRAD_LAUNCHER=syncgrad-launch", "RANK=3", "WORLD_SIZE=4", "SLURM_PROCID=1"}) {
    CHECK_MESSAGE(std::find(env.begin(), env.end(), entry) != env.end(), entry);
  }
}
