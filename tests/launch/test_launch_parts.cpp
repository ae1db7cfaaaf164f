// The launcher's pieces in-process: line prefixing (whole lines, one sink call per feed, partial and
// overlong lines), each rank's environment, the checks of the command line, the job's token and id (SHA-256),
// and wait statuses in words.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/check_error.h"
#include "tools/launch/errors.h"
#include "tools/launch/hang_limit.h"
#include "tools/launch/line_prefixer.h"
#include "tools/launch/node_range.h"
#include "tools/launch/options.h"
#include "tools/launch/rank_env.h"
#include "tools/launch/restart_policy.h"
#include "tools/launch/sha256.h"
#include "tools/launch/token.h"
#include "tools/launch/wait_status.h"

using namespace syncgrad::launch;
using syncgrad::testing::check_error;

namespace {

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

}  // namespace

TEST_CASE("LinePrefixer passes on whole lines only") {
  std::vector<std::string> out;
  LinePrefixer p("[rank3]: ", [&](std::string_view s) { out.emplace_back(s); });
  p.feed("hel");
  CHECK(out.empty());
  p.feed("lo\nwor");
  REQUIRE(out.size() == 1);
  CHECK(out[0] == "[rank3]: hello\n");
  p.feed("ld\n\na\nb");
  REQUIRE(out.size() == 2);
  CHECK(out[1] == "[rank3]: world\n[rank3]: \n[rank3]: a\n");
  p.finish();
  REQUIRE(out.size() == 3);
  CHECK(out[2] == "[rank3]: b\n");
  p.finish();
  CHECK(out.size() == 3);
}

TEST_CASE("LinePrefixer passes on an overlong partial line rather than holding it") {
  std::string out;
  LinePrefixer p(
      "> ", [&](std::string_view s) { out += s; }, 8);
  p.feed("0123");
  CHECK(out.empty());
  p.feed("456789");
  CHECK(out == "> 0123456789\n");
  p.feed("x\n");
  CHECK(out == "> 0123456789\n> x\n");
}

TEST_CASE("rank_environment: torchrun's variables, the store and one thread per rank") {
  LaunchOptions o;
  o.nproc_per_node = 2;
  o.nnodes = 3;
  o.node_rank = 1;
  std::vector<std::string> base = {"PATH=/bin", "RANK=9", "MASTER_PORT=1", "HOME=/root"};
  std::vector<std::string> env = rank_environment(base, o, 1, {"10.0.0.1", 29500, "tok"}, "sg-job");
  for (const char* entry :
       {"PATH=/bin", "HOME=/root", "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=6", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=1",
        "GROUP_WORLD_SIZE=3", "ROLE_RANK=3", "ROLE_WORLD_SIZE=6", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500",
        "SYNCGRAD_STORE_TOKEN=tok", "SYNCGRAD_STORE_SERVED=1", "SYNCGRAD_JOB_ID=sg-job", "OMP_NUM_THREADS=1"}) {
    CHECK_MESSAGE(has(env, entry), entry);
  }
  CHECK_FALSE(has(env, "RANK=9"));
  CHECK_FALSE(has(env, "MASTER_PORT=1"));
  for (const std::string& entry : env) CHECK(entry.rfind("SYNCGRAD_TIMEOUT=", 0) != 0);
  base.push_back("OMP_NUM_THREADS=4");
  base.push_back("SYNCGRAD_TIMEOUT=99");
  o.timeout = "3";
  o.rendezvous_timeout = "2.5";
  env = rank_environment(base, o, 0, {"10.0.0.1", 29500, "tok"}, "sg-job");
  CHECK(has(env, "OMP_NUM_THREADS=4"));
  CHECK_FALSE(has(env, "OMP_NUM_THREADS=1"));
  CHECK(has(env, "SYNCGRAD_TIMEOUT=3"));
  CHECK_FALSE(has(env, "SYNCGRAD_TIMEOUT=99"));
  CHECK(has(env, "SYNCGRAD_RENDEZVOUS_TIMEOUT=2.5"));
  CHECK(has(env, "SYNCGRAD_RESTART_COUNT=0"));
  base.push_back("SYNCGRAD_RESTART_COUNT=7");
  env = rank_environment(base, o, 0, {"10.0.0.1", 29500, "tok"}, "sg-job", 2);
  CHECK(has(env, "SYNCGRAD_RESTART_COUNT=2"));
  CHECK_FALSE(has(env, "SYNCGRAD_RESTART_COUNT=7"));
}

TEST_CASE("check_flags: defaults, values and errors") {
  LaunchFlags f;
  LaunchOptions o = check_flags(f, {"prog", "-x"});
  CHECK(o.nproc_per_node == 1);
  CHECK(o.master_addr == "127.0.0.1");
  CHECK(o.master_port == 0);
  CHECK(o.grace_period.count() == 5000);
  CHECK(o.command == std::vector<std::string>{"prog", "-x"});
  f.grace_period = "0.25";
  f.master_port = "65535";
  CHECK(check_flags(f, {"--", "-prog"}).command == std::vector<std::string>{"-prog"});
  CHECK(check_flags(f, {"p"}).grace_period.count() == 250);
  CHECK(check_flags(f, {"p"}).master_port == 65535);
  check_error<UsageError>([] { check_flags({}, {}); }, {"missing PROGRAM"});
  check_error<UsageError>([] { check_flags({}, {"-v"}); }, {"unknown option -v"});
  LaunchFlags bad;
  bad.nproc_per_node = "1x";
  check_error<UsageError>([&] { check_flags(bad, {"p"}); }, {"--nproc-per-node 1x", "e.g. --nproc-per-node 2"});
  LaunchFlags multi;
  multi.nnodes = "2";
  multi.master_addr = "h";
  check_error<UsageError>([&] { check_flags(multi, {"p"}); }, {"--nnodes 2 needs --master-port"});
  multi.master_port = "29500";
  CHECK(check_flags(multi, {"p"}).world_size() == 2);
}

TEST_CASE("check_flags: --timeout and --rendezvous-timeout in seconds, bad values named with the range") {
  LaunchFlags f;
  CHECK_FALSE(check_flags(f, {"p"}).timeout);
  CHECK_FALSE(check_flags(f, {"p"}).rendezvous_timeout);
  f.timeout = "3";
  f.rendezvous_timeout = "0.5";
  CHECK(check_flags(f, {"p"}).timeout == "3");
  CHECK(check_flags(f, {"p"}).rendezvous_timeout == "0.5");
  for (const char* bad : {"0", "-1", "nan", "1e30", "abc", "", "inf"}) {
    LaunchFlags t;
    t.timeout = bad;
    check_error<UsageError>([&] { check_flags(t, {"p"}); },
                            {"--timeout " + std::string(bad) + ": expected a number of seconds from 0.001 to 604800"});
    LaunchFlags r;
    r.rendezvous_timeout = bad;
    check_error<UsageError>([&] { check_flags(r, {"p"}); },
                            {"--rendezvous-timeout " + std::string(bad) + ": expected a number of seconds"});
  }
}

TEST_CASE("sha256_hex: the FIPS 180-4 examples") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("job_id: derived from the token, the user's own kept") {
  const char* caller = std::getenv("SYNCGRAD_JOB_ID");
  std::string saved = caller ? caller : "";
  unsetenv("SYNCGRAD_JOB_ID");
  const std::string a = job_id("token-a");
  CHECK(a.size() == 15);
  CHECK(a.rfind("sg-", 0) == 0);
  CHECK(a.find_first_not_of("0123456789abcdef", 3) == std::string::npos);
  CHECK(job_id("token-a") == a);
  CHECK(job_id("token-b") != a);
  CHECK(a.find("token") == std::string::npos);
  setenv("SYNCGRAD_JOB_ID", "users-own", 1);
  CHECK(job_id("token-a") == "users-own");
  if (caller) {
    setenv("SYNCGRAD_JOB_ID", saved.c_str(), 1);
  } else {
    unsetenv("SYNCGRAD_JOB_ID");
  }
}

TEST_CASE("job_token: fresh on one node, shared across nodes") {
  LaunchOptions one;
  std::string a = job_token(one);
  CHECK(a.size() == 32);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(job_token(one) != a);
  one.token = "given";
  CHECK(job_token(one) == "given");
  const char* caller = std::getenv("SYNCGRAD_STORE_TOKEN");
  std::string saved = caller ? caller : "";
  LaunchOptions two;
  two.nnodes = 2;
  unsetenv("SYNCGRAD_STORE_TOKEN");
  check_error<UsageError>([&] { job_token(two); }, {"pass the same --token to every node's launcher"});
  setenv("SYNCGRAD_STORE_TOKEN", "shared", 1);
  CHECK(job_token(two) == "shared");
  if (caller) {
    setenv("SYNCGRAD_STORE_TOKEN", saved.c_str(), 1);
  } else {
    unsetenv("SYNCGRAD_STORE_TOKEN");
  }
}

TEST_CASE("wait statuses in words and as exit codes") {
  int exited3 = 3 << 8;
  CHECK(WIFEXITED(exited3));
  CHECK(describe_wait_status(exited3) == "exited with status 3");
  CHECK(exit_code_of(exited3) == 3);
  CHECK(failed(exited3));
  CHECK_FALSE(failed(0));
  int killed = SIGKILL;
  CHECK(WIFSIGNALED(killed));
  CHECK(describe_wait_status(killed) == "was killed by SIGKILL (signal 9)");
  CHECK(exit_code_of(killed) == 137);
}

TEST_CASE("decide_restart: a failure restarts while restarts remain; 75, a stop signal or success never") {
  const int exit3 = 3 << 8, exit75 = 75 << 8, killed = SIGKILL;
  RestartDecision d = decide_restart({1, exit3, false}, 0, 2);
  CHECK(d.restart);
  CHECK(d.message == "rank 1 exited with status 3; restarting all ranks (restart 1 of 2)");
  CHECK(decide_restart({0, killed, false}, 1, 2).message ==
        "rank 0 was killed by SIGKILL (signal 9); restarting all ranks (restart 2 of 2)");
  d = decide_restart({1, exit3, false}, 2, 2);
  CHECK_FALSE(d.restart);
  CHECK(d.message == "rank 1 exited with status 3; restarts exhausted (2 of 2 used, --max-restarts 2); exiting with "
                     "status 3");
  CHECK(decide_restart({1, exit3, false}, 0, 0).message.empty());  // the default: nothing changes
  for (const AttemptEnd& end : {AttemptEnd{1, exit75, false}, AttemptEnd{1, exit3, true}, AttemptEnd{}}) {
    d = decide_restart(end, 0, 3);
    CHECK_FALSE(d.restart);
    CHECK(d.message.empty());
  }
}

TEST_CASE("check_flags: --max-restarts") {
  LaunchFlags f;
  CHECK(check_flags(f, {"prog"}).max_restarts == 0);
  f.max_restarts = "3";
  CHECK(check_flags(f, {"prog"}).max_restarts == 3);
  for (const char* bad : {"-1", "abc", "1e9", "10001", ""}) {
    f.max_restarts = bad;
    check_error<UsageError>([&] { check_flags(f, {"prog"}); },
                            {"--max-restarts " + std::string(bad) + ": expected an integer 0..10000"});
  }
  f.max_restarts = "1";
  f.nnodes = "2";
  f.master_addr = "10.0.0.1";
  f.master_port = "29500";
  LaunchOptions o = check_flags(f, {"prog"});
  CHECK(o.max_restarts == 1);
  CHECK(o.min_nodes() == 2);
  CHECK_FALSE(o.elastic());
  CHECK(o.coordinated());  // several nodes restart together through the store
  f.max_restarts = "0";
  CHECK_FALSE(check_flags(f, {"prog"}).coordinated());
}

TEST_CASE("--nnodes N or MIN:MAX") {
  CHECK(parse_node_range("2", 100).min == 2);
  CHECK(parse_node_range("2", 100).max == 2);
  CHECK_FALSE(parse_node_range("2", 100).elastic());
  NodeRange r = parse_node_range("1:4", 100);
  CHECK(r.min == 1);
  CHECK(r.max == 4);
  CHECK(r.elastic());
  for (const char* bad : {"0", "", "a", "1:", ":2", "1:2:3", "0:2", "2:x", "1:101", " 1:2"}) {
    check_error<UsageError>([&] { parse_node_range(bad, 100); },
                            {"--nnodes " + std::string(bad) + ": expected an integer >= 1", "MIN:MAX"});
  }
  check_error<UsageError>([&] { parse_node_range("3:2", 100); },
                          {"--nnodes 3:2: MIN 3 is above MAX 2", "e.g. --nnodes 2:3"});
  LaunchFlags f;
  f.nnodes = "1:3";
  f.node_rank = "2";
  f.master_addr = "10.0.0.1";
  f.master_port = "29500";
  LaunchOptions o = check_flags(f, {"prog"});
  CHECK(o.min_nodes() == 1);
  CHECK(o.nnodes == 3);
  CHECK(o.elastic());
  CHECK(o.coordinated());  // elastic even without restarts
  f.node_rank = "3";
  check_error<UsageError>([&] { check_flags(f, {"prog"}); }, {"--node-rank 3 is not below --nnodes 1:3"});
  f.node_rank = "0";
  f.master_port = "";
  check_error<UsageError>([&] { check_flags(f, {"prog"}); }, {"--nnodes 1:3 needs --master-port"});
}

TEST_CASE("hang_limit: the collective timeout and 5 s") {
  LaunchOptions o;
  o.timeout = "2.5";
  CHECK(hang_limit(o) == std::chrono::milliseconds(7500));
  o.timeout.reset();
  const char* saved = std::getenv("SYNCGRAD_TIMEOUT");
  const std::string keep = saved ? saved : "";
  setenv("SYNCGRAD_TIMEOUT", "10", 1);
  CHECK(hang_limit(o) == std::chrono::milliseconds(15000));
  unsetenv("SYNCGRAD_TIMEOUT");
  CHECK(hang_limit(o) == std::chrono::milliseconds(605000));
  if (saved) setenv("SYNCGRAD_TIMEOUT", keep.c_str(), 1);
}
