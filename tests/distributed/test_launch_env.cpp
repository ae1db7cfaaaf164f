// read_launch_env() and launched_distributed(): the syncgrad-launch/torchrun variables, Slurm's, the
// defaults, and an error naming the variable, its value and the fix for every malformed value. (Open MPI, PMI,
// the choice among sources and the node lists: test_scheduler_env.cpp.)
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>

#include "distributed/errors.h"
#include "distributed/launch_env.h"
#include "tests/check_error.h"
#include "tests/distributed/scoped_env.h"

using syncgrad::distributed::launched_distributed;
using syncgrad::distributed::parse_timeout_seconds;
using syncgrad::distributed::LaunchEnv;
using syncgrad::distributed::read_launch_env;
using syncgrad::distributed::RendezvousError;
using syncgrad::testing::check_error;
using syncgrad::testing::ScopedEnv;

namespace {

void expect_error(const std::map<std::string, std::string>& values, std::initializer_list<std::string> fragments,
                  bool require_master = false) {
  ScopedEnv env(values);
  check_error<RendezvousError>([&] { read_launch_env(require_master); }, fragments);
}

}  // namespace

TEST_CASE("launch env: defaults without any variable") {
  ScopedEnv env({});
  LaunchEnv e = read_launch_env();
  CHECK(e.rank == 0);
  CHECK(e.world_size == 1);
  CHECK(e.local_rank == 0);
  CHECK(e.local_world_size == 1);
  CHECK(e.master_addr.empty());
  CHECK(e.master_port == 0);
  CHECK(e.store_token.empty());
  CHECK_FALSE(e.store_served);
  CHECK(e.source == "defaults");
  CHECK_FALSE(launched_distributed());
}

TEST_CASE("launch env: the variables syncgrad-launch sets") {
  ScopedEnv env({{"RANK", "3"},
                 {"WORLD_SIZE", "4"},
                 {"LOCAL_RANK", "1"},
                 {"LOCAL_WORLD_SIZE", "2"},
                 {"MASTER_ADDR", "10.1.2.3"},
                 {"MASTER_PORT", "29501"},
                 {"SYNCGRAD_STORE_TOKEN", "abc123"},
                 {"SYNCGRAD_STORE_SERVED", "1"},
                 {"SYNCGRAD_LAUNCHER", "syncgrad-launch"}});
  LaunchEnv e = read_launch_env(true);
  CHECK(e.rank == 3);
  CHECK(e.world_size == 4);
  CHECK(e.local_rank == 1);
  CHECK(e.local_world_size == 2);
  CHECK(e.master_addr == "10.1.2.3");
  CHECK(e.master_port == 29501);
  CHECK(e.store_token == "abc123");
  CHECK(e.store_served);
  CHECK(e.source == "syncgrad-launch");
  CHECK(launched_distributed());
}

TEST_CASE("launch env: a job started by hand on one machine may leave out the local variables") {
  ScopedEnv env({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  LaunchEnv e = read_launch_env();
  CHECK(e.source == "torchrun-style environment");
  CHECK(e.local_rank == 1);
  CHECK(e.local_world_size == 2);
  CHECK_FALSE(e.store_served);
}

TEST_CASE("launch env: malformed launcher variables name the variable, the value and the fix") {
  expect_error({{"RANK", "1"}}, {"WORLD_SIZE is not set", "RANK=1", "syncgrad-launch"});
  expect_error({{"WORLD_SIZE", "2"}}, {"RANK is not set", "WORLD_SIZE=2"});
  expect_error({{"RANK", "x"}, {"WORLD_SIZE", "2"}}, {"RANK='x'", "integer", "0 .. WORLD_SIZE-1"});
  expect_error({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, {"RANK='-1'"});
  expect_error({{"RANK", ""}, {"WORLD_SIZE", "2"}}, {"RANK=''"});
  expect_error({{"RANK", "1 "}, {"WORLD_SIZE", "2"}}, {"RANK='1 '"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, {"WORLD_SIZE='0'", ">= 1", "number of processes"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "99999999999999"}}, {"WORLD_SIZE='99999999999999'"});
  expect_error({{"RANK", "4"}, {"WORLD_SIZE", "4"}}, {"RANK=4", "WORLD_SIZE=4", "0 to WORLD_SIZE-1"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}},
               {"LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}}, {"LOCAL_WORLD_SIZE=3", "WORLD_SIZE=2"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "one"}}, {"LOCAL_RANK='one'"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}},
               {"MASTER_PORT='70000'", "1..65535", "29500"});
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "0"}}, {"MASTER_PORT='0'"});
  expect_error({{"MASTER_PORT", "http"}}, {"MASTER_PORT='http'"});
  expect_error({{"SYNCGRAD_STORE_SERVED", "yes"}}, {"SYNCGRAD_STORE_SERVED='yes'", "0 nor 1"});
  expect_error({{"SYNCGRAD_LAUNCHER", "torchrun"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}},
               {"SYNCGRAD_LAUNCHER='torchrun'", "unset it"});
  expect_error({{"SYNCGRAD_LAUNCHER", "syncgrad-launch"}}, {"RANK and WORLD_SIZE are not", "unset SYNCGRAD_LAUNCHER"});
  ScopedEnv env({{"RANK", "9"}, {"WORLD_SIZE", "2"}});
  CHECK_THROWS_AS(launched_distributed(), RendezvousError);
}

TEST_CASE("launch env: the job's identity, from the launcher, else Slurm, else none") {
  {
    ScopedEnv env({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
    CHECK(read_launch_env().job_id.empty());
  }
  {
    ScopedEnv env({{"SYNCGRAD_JOB_ID", "sg-1234"}, {"SLURM_JOB_ID", "77"}});
    CHECK(read_launch_env().job_id == "sg-1234");
  }
  {
    ScopedEnv env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SLURM_JOB_ID", "77"}});
    CHECK(read_launch_env().job_id == "77");
  }
  {
    ScopedEnv env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "3"}});
    CHECK(read_launch_env().job_id == "77.3");
  }
  {
    ScopedEnv env({{"SLURM_PROCID", "0"}, {"SLURM_STEPID", "4"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "77"},
                   {"SYNCGRAD_JOB_ID", "mine"}});
    CHECK(read_launch_env().job_id == "mine");
  }
}

TEST_CASE("launch env: the timeouts syncgrad-launch exports, in seconds") {
  {
    ScopedEnv env({});
    CHECK_FALSE(read_launch_env().timeout);
    CHECK_FALSE(read_launch_env().rendezvous_timeout);
  }
  {
    ScopedEnv env({{"SYNCGRAD_TIMEOUT", "3"}, {"SYNCGRAD_RENDEZVOUS_TIMEOUT", "0.25"}});
    LaunchEnv e = read_launch_env();
    CHECK(e.timeout == std::chrono::milliseconds(3000));
    CHECK(e.rendezvous_timeout == std::chrono::milliseconds(250));
  }
  for (const char* bad : {"0", "-1", "nan", "inf", "1e30", "abc", "", " 5", "5s", "604801", "0.0001"}) {
    expect_error({{"SYNCGRAD_TIMEOUT", bad}},
                 {"SYNCGRAD_TIMEOUT='" + std::string(bad) + "'", "from 0.001 to 604800", "--timeout"});
    expect_error({{"SYNCGRAD_RENDEZVOUS_TIMEOUT", bad}},
                 {"SYNCGRAD_RENDEZVOUS_TIMEOUT='" + std::string(bad) + "'", "from 0.001 to 604800",
                  "--rendezvous-timeout"});
  }
  CHECK(parse_timeout_seconds("600") == std::chrono::milliseconds(600'000));
  CHECK(parse_timeout_seconds("1e3") == std::chrono::milliseconds(1'000'000));
  CHECK(parse_timeout_seconds("0.001") == std::chrono::milliseconds(1));
  CHECK(parse_timeout_seconds("604800") == std::chrono::milliseconds(604'800'000));
  CHECK_FALSE(parse_timeout_seconds("+5"));
}

TEST_CASE("launch env: require_master names the missing variable") {
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"}},
               {"MASTER_ADDR is not set", "export MASTER_ADDR", "syncgrad-launch"}, true);
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "localhost"}},
               {"MASTER_PORT is not set", "MASTER_ADDR=localhost", "export MASTER_PORT"}, true);
  ScopedEnv env({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  LaunchEnv e = read_launch_env(false);
  CHECK(e.master_addr.empty());
  CHECK(e.master_port == 0);
}

TEST_CASE("launch env: Slurm") {
  SUBCASE("SLURM_STEP_TASKS_PER_NODE and the first host of the step's node list") {
    ScopedEnv env({{"SLURM_PROCID", "5"},
                   {"SLURM_STEP_ID", "0"},
                   {"SLURM_STEP_NUM_TASKS", "7"},
                   {"SLURM_NTASKS", "99"},
                   {"SLURM_LOCALID", "1"},
                   {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"},
                   {"SLURM_TASKS_PER_NODE", "99"},
                   {"SLURM_NODEID", "2"},
                   {"SLURM_STEP_NODELIST", "node[03-06]"},
                   {"SLURM_JOB_NODELIST", "node[01-06],gpu7"}});
    LaunchEnv e = read_launch_env(true);
    CHECK(e.rank == 5);
    CHECK(e.world_size == 7);
    CHECK(e.local_rank == 1);
    CHECK(e.local_world_size == 2);
    CHECK(e.master_addr == "node03");
    CHECK(e.master_port == 29500);  // no SLURM_JOB_ID to derive one from
    CHECK(e.source == "slurm");
    CHECK(launched_distributed());
  }
  SUBCASE("the last node of SLURM_TASKS_PER_NODE; SLURM_JOB_NODELIST without a step list") {
    ScopedEnv env({{"SLURM_PROCID", "6"},
                   {"SLURM_STEP_ID", "0"},
                   {"SLURM_NTASKS", "7"},
                   {"SLURM_LOCALID", "0"},
                   {"SLURM_TASKS_PER_NODE", "2(x3),1"},
                   {"SLURM_NODEID", "3"},
                   {"SLURM_JOB_NODELIST", "gpu7,node[1-3]"},
                   {"SLURM_NODELIST", "other"}});
    LaunchEnv e = read_launch_env();
    CHECK(e.local_world_size == 1);
    CHECK(e.master_addr == "gpu7");
  }
  SUBCASE("SLURM_TASKS_PER_NODE wins over SLURM_NTASKS_PER_NODE; MASTER_ADDR and MASTER_PORT override") {
    ScopedEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_STEP_ID", "2"},
                   {"SLURM_NTASKS", "8"},
                   {"SLURM_LOCALID", "3"},
                   {"SLURM_NTASKS_PER_NODE", "garbage"},
                   {"SLURM_TASKS_PER_NODE", "4(x2)"},
                   {"SLURM_JOB_ID", "1234"},
                   {"SLURM_JOB_NODELIST", "rack[2-3]-n[05,07]"},
                   {"MASTER_PORT", "1234"}});
    LaunchEnv e = read_launch_env();
    CHECK(e.local_world_size == 4);
    CHECK(e.master_addr == "rack2-n05");
    CHECK(e.master_port == 1234);
    CHECK(e.job_id == "1234.2");
    setenv("MASTER_ADDR", "head", 1);
    CHECK(read_launch_env().master_addr == "head");
    setenv("SLURM_JOB_NODELIST", "node[01-", 1);  // not read when MASTER_ADDR names the host
    CHECK(read_launch_env().master_addr == "head");
  }
  SUBCASE("syncgrad-launch's ranks: its variables, the inherited Slurm ones not read") {
    ScopedEnv env({{"SLURM_PROCID", "3"},
                   {"SLURM_STEP_ID", "0"},
                   {"SLURM_NTASKS", "4"},
                   {"SYNCGRAD_LAUNCHER", "syncgrad-launch"},
                   {"RANK", "0"},
                   {"WORLD_SIZE", "2"},
                   {"LOCAL_RANK", "0"},
                   {"LOCAL_WORLD_SIZE", "2"}});
    LaunchEnv e = read_launch_env();
    CHECK(e.rank == 0);
    CHECK(e.world_size == 2);
    CHECK(e.source == "syncgrad-launch");
  }
  SUBCASE("every task on one node: 127.0.0.1") {
    ScopedEnv env({{"SLURM_PROCID", "1"},
                   {"SLURM_STEP_ID", "0"},
                   {"SLURM_NTASKS", "2"},
                   {"SLURM_LOCALID", "1"},
                   {"SLURM_STEP_TASKS_PER_NODE", "2"},
                   {"SLURM_STEP_NODELIST", "node01"}});
    CHECK(read_launch_env().master_addr == "127.0.0.1");
  }
  SUBCASE("the batch script (SLURM_PROCID=0 without a step id) is one process") {
    ScopedEnv env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "77"},
                   {"SLURM_JOB_NODELIST", "node[1-2]"}});
    LaunchEnv e = read_launch_env();
    CHECK(e.source == "defaults");
    CHECK(e.world_size == 1);
    CHECK(e.job_id == "77");
    CHECK_FALSE(launched_distributed());
  }
}

TEST_CASE("launch env: malformed Slurm variables name the variable, the value and the fix") {
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}},
               {"SLURM_STEP_NUM_TASKS and SLURM_NTASKS are not set", "SLURM_PROCID=0", "srun"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "x"}, {"SLURM_NTASKS", "2"}}, {"SLURM_STEP_ID='x'", "srun"});
  expect_error({{"SLURM_PROCID", "a"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "2"}}, {"SLURM_PROCID='a'", "srun"});
  expect_error({{"SLURM_PROCID", "2"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "2"}},
               {"SLURM_PROCID=2", "SLURM_NTASKS=2"});
  expect_error({{"SLURM_PROCID", "2"}, {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "2"}},
               {"SLURM_PROCID=2", "SLURM_STEP_NUM_TASKS=2"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "5"},
                {"SLURM_STEP_RESV_PORTS", "ports"}},
               {"SLURM_STEP_RESV_PORTS='ports'", "MASTER_PORT"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_TASKS_PER_NODE", "2(x"}},
               {"SLURM_TASKS_PER_NODE='2(x'", "2(x3),1", "SLURM_NTASKS_PER_NODE"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "4"},
                {"SLURM_TASKS_PER_NODE", "2(y2)"}},
               {"SLURM_TASKS_PER_NODE='2(y2)'"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_TASKS_PER_NODE", "2,"}},
               {"SLURM_TASKS_PER_NODE='2,'"});
  expect_error({{"SLURM_PROCID", "0"},
                {"SLURM_STEP_ID", "0"},
                {"SLURM_NTASKS", "4"},
                {"SLURM_TASKS_PER_NODE", "2(x2)"},
                {"SLURM_NODEID", "2"}},
               {"SLURM_NODEID=2", "SLURM_TASKS_PER_NODE='2(x2)'", "SLURM_NTASKS_PER_NODE"});
  expect_error({{"SLURM_PROCID", "0"},
                {"SLURM_STEP_ID", "0"},
                {"SLURM_NTASKS", "4"},
                {"SLURM_LOCALID", "2"},
                {"SLURM_NTASKS_PER_NODE", "2"}},
               {"SLURM_LOCALID=2", "SLURM_NTASKS_PER_NODE=2"});
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_NTASKS_PER_NODE", "0"}},
               {"SLURM_NTASKS_PER_NODE='0'"});
  for (const char* list : {"node[01-04", "node01-04]", "", "[]", ", ,", "n[a-b]"}) {
    CAPTURE(list);
    expect_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", list}},
                 {"SLURM_JOB_NODELIST='" + std::string(list) + "'", "node[01-04,07],gpu7", "MASTER_ADDR"});
  }
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "2"}, {"MASTER_PORT", "99999"}},
               {"MASTER_PORT='99999'"});
}
