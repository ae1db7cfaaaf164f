// Declares and checks syncgrad-launch's flags; every bad value is a UsageError that names it and says
// what would work.
#include "tools/launch/options.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "distributed/launch_env.h"
#include "tensor/check.h"
#include "tools/launch/errors.h"
#include "tools/launch/node_range.h"
#include "tools/launch/slurm_layout.h"

namespace syncgrad::launch {
namespace {

constexpr long long kMaxCount = 1 << 20;
constexpr long long kMaxRestarts = 10000;

std::optional<long long> parse_int(std::string_view text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// `value` as an integer in lo..hi, or a UsageError naming flag and value, what was expected and a hint.
int check_int(const char* flag, const std::string& value, long long lo, long long hi, const std::string& hint) {
  std::optional<long long> n = parse_int(value);
  if (!n || *n < lo || *n > hi) {
    std::string range = hi == kMaxCount ? ">= " + std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
    throw UsageError(std::string(flag) + " " + value + ": expected an integer " + range + "; " + hint);
  }
  return static_cast<int>(*n);
}

// A timeout flag's value, checked as the ranks will read it back (distributed/launch_env.h).
std::optional<std::string> check_timeout(const char* flag, const std::optional<std::string>& value,
                                         const char* example) {
  if (!value) return std::nullopt;
  SYNCGRAD_CHECK(distributed::parse_timeout_seconds(*value), UsageError, flag, " ", *value, ": expected ",
                 distributed::timeout_range_text(), ", e.g. ", flag, " ", example);
  return value;
}

}  // namespace

void add_flags(CLI::App& app, LaunchFlags& flags) {
  app.add_option("--nproc-per-node", flags.nproc_per_node, "processes (ranks) to start on this node")
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--nnodes", flags.nnodes,
                 "nodes in the job, or MIN:MAX for an elastic job that goes on with the nodes left after one is "
                 "lost (at least MIN) and takes nodes back at the next restart; each node runs its own "
                 "syncgrad-launch (default 1; under srun the step's node count, one syncgrad-launch per node)")
      ->type_name("M|MIN:MAX");
  app.add_option("--node-rank", flags.node_rank,
                 "this node's index, 0 .. nnodes-1; node 0 serves the store (default 0; under srun SLURM_NODEID)")
      ->type_name("K");
  app.add_option("--master-addr", flags.master_addr,
                 "address of node 0, reachable from every node (default 127.0.0.1 on one node; under srun the "
                 "step's first node; else required with --nnodes > 1)")
      ->type_name("ADDR");
  app.add_option("--master-port", flags.master_port,
                 "port of the job's store on node 0 (default: a free port on one node; under srun the step's "
                 "reserved port or one derived from its job id; else required with --nnodes > 1)")
      ->type_name("PORT");
  app.add_option("--grace-period", flags.grace_period, "seconds between SIGTERM and SIGKILL when the ranks are stopped")
      ->type_name("SECONDS")
      ->capture_default_str();
  app.add_option("--max-restarts", flags.max_restarts,
                 "times to stop and start all ranks again when one fails (not when one exits 75, preempted, nor on "
                 "a signal to syncgrad-launch); each attempt's ranks get SYNCGRAD_RESTART_COUNT (0 on the first) and "
                 "a fresh store, and resume from their own checkpoints (e.g. syncgrad-train --resume auto); with "
                 "--nnodes > 1 all nodes restart together (the same N on every node)")
      ->type_name("N")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--token", [&flags](const std::string& token) { flags.token = token; },
         "the job's store token, the same for every node's launcher (default: a fresh random one on one node, "
         "$SYNCGRAD_STORE_TOKEN with --nnodes > 1, which keeps it out of ps, else under srun slurm-JOB.STEP, which "
         "keeps other jobs out but is no secret)")
      ->type_name("TOKEN");
  app.add_option_function<std::string>(
         "--timeout", [&flags](const std::string& seconds) { flags.timeout = seconds; },
         "seconds a collective may take before the ranks fail with a TimeoutError naming the silent rank, exported "
         "as SYNCGRAD_TIMEOUT (default 600, or $SYNCGRAD_TIMEOUT; a program's own timeout wins)")
      ->type_name("SECONDS");
  app.add_option_function<std::string>(
         "--rendezvous-timeout", [&flags](const std::string& seconds) { flags.rendezvous_timeout = seconds; },
         "seconds the ranks may take to reach the store and meet each other before they fail naming the ranks "
         "that never arrived, exported as SYNCGRAD_RENDEZVOUS_TIMEOUT (default 300, or $SYNCGRAD_RENDEZVOUS_TIMEOUT); with "
         "--nnodes > 1 and --max-restarts, or MIN:MAX, also how long each attempt waits for the nodes before it ends "
         "the job naming the missing ones")
      ->type_name("SECONDS");
  app.prefix_command();
  app.footer(
      "PROGRAM ARGS... runs once per rank (found via PATH), with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, "
      "GROUP_RANK, MASTER_ADDR, MASTER_PORT, SYNCGRAD_STORE_TOKEN, SYNCGRAD_STORE_SERVED=1, SYNCGRAD_JOB_ID (the "
      "job's id, derived from the token, unless set), SYNCGRAD_LAUNCHER=syncgrad-launch, SYNCGRAD_RESTART_COUNT, "
      "SYNCGRAD_HEARTBEAT_FD (a rank silent there past the collective timeout and 5 s is killed as hung), "
      "SYNCGRAD_ELASTIC=1 (with --nnodes MIN:MAX) and "
      "OMP_NUM_THREADS=1 (unless set) in its environment and "
      "stdin at /dev/null. Each output line is prefixed with [rankN]. When a rank fails the others are stopped and "
      "syncgrad-launch exits with the failing rank's status (128+signal when it was killed); when syncgrad-launch "
      "itself is killed, its ranks die with it; SIGUSR1 is passed on to the ranks. Under srun, run one "
      "syncgrad-launch per node (srun --ntasks-per-node=1): the layout flags not given come from the step. Use -- "
      "before a PROGRAM whose name starts with '-'.");
}

LaunchOptions check_flags(const LaunchFlags& flags, std::vector<std::string> command,
                          const std::optional<distributed::SlurmStep>& slurm) {
  LaunchOptions o;
  o.nproc_per_node = check_int("--nproc-per-node", flags.nproc_per_node, 1, kMaxCount,
                               "start at least one process, e.g. --nproc-per-node 2");
  GivenLayout given;
  std::optional<NodeRange> nodes;
  if (!flags.nnodes.empty()) {
    nodes = parse_node_range(flags.nnodes, kMaxCount);
    given.nnodes = nodes->max;
  }
  if (!flags.node_rank.empty()) {
    given.node_rank = check_int("--node-rank", flags.node_rank, 0, kMaxCount, "nodes are numbered 0 .. nnodes-1");
  }
  given.master_addr = !flags.master_addr.empty();
  given.master_port = !flags.master_port.empty();
  if (given.master_port) {
    o.master_port = static_cast<uint16_t>(
        check_int("--master-port", flags.master_port, 1, 65535, "pick a free port, e.g. --master-port 29500"));
  }
  if (given.master_addr) o.master_addr = flags.master_addr;
  o.nnodes = given.nnodes.value_or(1);
  o.node_rank = given.node_rank.value_or(0);
  if (slurm) apply_slurm_step(*slurm, given, o);
  o.min_nnodes = nodes && nodes->elastic() ? nodes->min : 0;
  const std::string nnodes_text = flags.nnodes.empty() ? std::to_string(o.nnodes) : flags.nnodes;  // "2" or "1:3"
  SYNCGRAD_CHECK(o.node_rank < o.nnodes, UsageError, "--node-rank ", o.node_rank, " is not below --nnodes ", nnodes_text,
                 ": nodes are numbered 0 .. ", o.nnodes - 1, "; give each node's launcher its own --node-rank");
  SYNCGRAD_CHECK(static_cast<long long>(o.nproc_per_node) * o.nnodes <= kMaxCount, UsageError, "--nproc-per-node ",
                 flags.nproc_per_node, " times --nnodes ", nnodes_text, " is too many ranks; use fewer processes");
  if (o.nnodes > 1) {
    SYNCGRAD_CHECK(!o.master_addr.empty() && (given.master_addr || slurm), UsageError, "--nnodes ", nnodes_text,
                   " needs --master-addr: the address of node 0 (where the store is served), reachable from every "
                   "node; pass the same --master-addr to every node's launcher");
    SYNCGRAD_CHECK(o.master_port != 0, UsageError, "--nnodes ", nnodes_text,
                   " needs --master-port: a free port on node 0 for the job's store, e.g. --master-port 29500; pass "
                   "the same --master-port to every node's launcher");
  }
  char* end = nullptr;
  double grace = std::strtod(flags.grace_period.c_str(), &end);
  SYNCGRAD_CHECK(!flags.grace_period.empty() && *end == '\0' && std::isfinite(grace) && grace >= 0 && grace <= 86400,
                 UsageError, "--grace-period ", flags.grace_period,
                 ": expected seconds between 0 and 86400, e.g. --grace-period 5");
  o.grace_period = std::chrono::milliseconds(static_cast<long long>(std::llround(grace * 1000)));
  o.max_restarts = check_int("--max-restarts", flags.max_restarts, 0, kMaxRestarts,
                             "the times all ranks are started again after a failure, e.g. --max-restarts 3");
  SYNCGRAD_CHECK(
      !flags.token || !flags.token->empty(), UsageError,
      "--token is empty; pass the same non-empty token to every node's launcher, e.g. --token $(openssl rand -hex 16)");
  o.token = flags.token;
  o.timeout = check_timeout("--timeout", flags.timeout, "600");
  o.rendezvous_timeout = check_timeout("--rendezvous-timeout", flags.rendezvous_timeout, "300");
  if (!command.empty() && command.front() == "--") {
    command.erase(command.begin());
  } else if (!command.empty() && command.front().size() > 1 && command.front()[0] == '-') {
    throw UsageError("unknown option " + command.front() +
                     "; syncgrad-launch's flags come before PROGRAM (see --help), and a PROGRAM whose name starts "
                     "with '-' goes after --");
  }
  SYNCGRAD_CHECK(!command.empty(), UsageError,
                 "missing PROGRAM: usage: syncgrad-launch [--nproc-per-node N] ... PROGRAM [ARGS...], e.g. "
                 "syncgrad-launch --nproc-per-node 2 ./train");
  o.command = std::move(command);
  return o;
}

}  // namespace syncgrad::launch
