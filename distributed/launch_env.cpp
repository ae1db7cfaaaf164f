// read_launch_env(): where this process sits in the job, from the variables syncgrad-launch and torchrun
// set (RANK, WORLD_SIZE, ...) or, without them, from Slurm's SLURM_* variables. Every malformed or
// inconsistent value is a RendezvousError naming the variable, its value and the fix.
#include "distributed/launch_env.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/errors.h"
#include "tensor/check.h"

namespace syncgrad::distributed {
namespace {

constexpr uint16_t kSlurmDefaultPort = 29500;
constexpr const char* kLauncherSource = "syncgrad-launch/torchrun environment";

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// Parses a whole string as a decimal integer in [lo, hi]; nullopt when it is anything else.
std::optional<long long> parse_int(std::string_view text, long long lo, long long hi) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < lo || value > hi) return std::nullopt;
  return value;
}

// An integer variable that must hold a value >= lo; `fix` says what it should be.
int read_count(const char* name, const std::string& value, int lo, const std::string& fix) {
  std::optional<long long> n = parse_int(value, lo, 1 << 30);
  SYNCGRAD_CHECK(n, RendezvousError, name, "='", value, "' is not an integer >= ", lo, "; ", fix);
  return static_cast<int>(*n);
}

std::optional<int> read_optional_count(const char* name, int lo, const std::string& fix) {
  std::optional<std::string> value = env(name);
  if (!value) return std::nullopt;
  return read_count(name, *value, lo, fix);
}

uint16_t read_port(const char* name, const std::string& value) {
  std::optional<long long> port = parse_int(value, 1, 65535);
  SYNCGRAD_CHECK(port, RendezvousError, name, "='", value,
                 "' is not a port number in 1..65535; set it to the port the job's store is served on, e.g. ", name,
                 "=29500 (syncgrad-launch sets it for you)");
  return static_cast<uint16_t>(*port);
}

bool read_flag(const char* name) {
  std::optional<std::string> value = env(name);
  if (!value || value->empty() || *value == "0") return false;
  if (*value == "1") return true;
  throw RendezvousError(std::string(name) + "='" + *value + "' is neither 0 nor 1; unset it or set " + name +
                        "=1 only when the launcher serves the job's store");
}

// "2(x3),1" -> {2, 2, 2, 1}: Slurm's compressed list of tasks per node.
std::vector<int> parse_tasks_per_node(const char* name, const std::string& value) {
  auto malformed = [&] {
    return RendezvousError(std::string(name) + "='" + value +
                           "' is malformed; expected Slurm's form such as '4' or '2(x3),1'; unset it or set "
                           "SLURM_NTASKS_PER_NODE to the number of tasks on this node");
  };
  std::vector<int> counts;
  std::string_view rest = value;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    long long repeat = 1;
    size_t paren = item.find('(');
    std::string_view count_text = item.substr(0, paren);
    if (paren != std::string_view::npos) {
      std::string_view group = item.substr(paren);
      if (group.size() < 4 || group.substr(0, 2) != "(x" || group.back() != ')') throw malformed();
      std::optional<long long> r = parse_int(group.substr(2, group.size() - 3), 1, 1 << 20);
      if (!r) throw malformed();
      repeat = *r;
    }
    std::optional<long long> count = parse_int(count_text, 1, 1 << 20);
    if (!count) throw malformed();
    counts.insert(counts.end(), static_cast<size_t>(repeat), static_cast<int>(*count));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return counts;
}

// The first host of a Slurm node list: "node[01-04],gpu7" -> "node01", "rack[2-3]-n[5,7]" -> "rack2-n5".
std::string first_host(const char* name, const std::string& list) {
  auto malformed = [&] {
    return RendezvousError(std::string(name) + "='" + list +
                           "' is malformed; expected a Slurm node list such as 'node[01-04],gpu7'; set MASTER_ADDR "
                           "to the host of rank 0 to override it");
  };
  std::string host;
  size_t i = 0;
  while (i < list.size() && list[i] != ',') {
    if (list[i] == ']') throw malformed();
    if (list[i] != '[') {
      host += list[i++];
      continue;
    }
    size_t close = list.find(']', i);
    if (close == std::string::npos) throw malformed();
    std::string_view group(list.data() + i + 1, close - i - 1);
    std::string_view first = group.substr(0, group.find_first_of(",-"));
    if (first.empty() || first.find('[') != std::string_view::npos || !parse_int(first, 0, 1LL << 62)) {
      throw malformed();
    }
    host += first;
    i = close + 1;
  }
  if (host.empty()) throw malformed();
  return host;
}

void check_consistent(const LaunchEnv& e, const char* rank_name, const char* world_name, const char* local_name,
                      const char* local_world_name) {
  SYNCGRAD_CHECK(e.rank < e.world_size, RendezvousError, rank_name, "=", e.rank, " is not below ", world_name, "=",
                 e.world_size, ": ranks run from 0 to ", world_name,
                 "-1; check the launcher's process counts or the values you exported");
  SYNCGRAD_CHECK(e.local_world_size <= e.world_size, RendezvousError, local_world_name, "=", e.local_world_size,
                 " is larger than ", world_name, "=", e.world_size, "; a node cannot hold more processes than the job");
  SYNCGRAD_CHECK(e.local_rank < e.local_world_size, RendezvousError, local_name, "=", e.local_rank, " is not below ",
                 local_world_name, "=", e.local_world_size,
                 ": local ranks run from 0 to the number of processes on this node - 1; set ", local_world_name,
                 " to that number");
}

LaunchEnv read_launcher_env() {
  LaunchEnv e;
  e.source = kLauncherSource;
  std::optional<std::string> rank = env("RANK");
  std::optional<std::string> world = env("WORLD_SIZE");
  if (!rank || !world) {
    const char* missing = rank ? "WORLD_SIZE" : "RANK";
    const char* present = rank ? "RANK" : "WORLD_SIZE";
    throw RendezvousError(std::string(missing) + " is not set but " + present + "=" + (rank ? *rank : *world) +
                          " is; export both (RANK in 0..WORLD_SIZE-1), or start the job with syncgrad-launch, "
                          "which sets them");
  }
  e.world_size = read_count("WORLD_SIZE", *world, 1, "set it to the number of processes in the job");
  e.rank = read_count("RANK", *rank, 0, "set it to this process's rank, 0 .. WORLD_SIZE-1");
  // A job started by hand on one machine may leave out the local variables: then local = global.
  e.local_rank = read_optional_count("LOCAL_RANK", 0, "set it to this process's index on its node").value_or(e.rank);
  e.local_world_size = read_optional_count("LOCAL_WORLD_SIZE", 1, "set it to the number of processes on this node")
                           .value_or(e.world_size);
  check_consistent(e, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE");
  if (std::optional<std::string> port = env("MASTER_PORT")) e.master_port = read_port("MASTER_PORT", *port);
  return e;
}

LaunchEnv read_slurm_env() {
  LaunchEnv e;
  e.source = "Slurm";
  std::optional<std::string> ntasks = env("SLURM_NTASKS");
  if (!ntasks) ntasks = env("SLURM_NPROCS");
  SYNCGRAD_CHECK(ntasks, RendezvousError, "SLURM_NTASKS is not set but SLURM_PROCID=", *env("SLURM_PROCID"),
                 " is; run the job with srun (which sets both) or export RANK and WORLD_SIZE");
  e.world_size = read_count("SLURM_NTASKS", *ntasks, 1, "Slurm sets it to the number of tasks; run with srun");
  e.rank = read_count("SLURM_PROCID", *env("SLURM_PROCID"), 0, "Slurm sets it to the task's rank; run with srun");
  e.local_rank = read_optional_count("SLURM_LOCALID", 0, "Slurm sets it to the task's index on its node").value_or(0);
  const char* local_world_name = "SLURM_NTASKS_PER_NODE";
  if (std::optional<int> per_node = read_optional_count("SLURM_NTASKS_PER_NODE", 1, "set it to the tasks per node")) {
    e.local_world_size = *per_node;
  } else if (std::optional<std::string> tasks = env("SLURM_TASKS_PER_NODE")) {
    local_world_name = "SLURM_TASKS_PER_NODE";
    std::vector<int> counts = parse_tasks_per_node("SLURM_TASKS_PER_NODE", *tasks);
    int node = read_optional_count("SLURM_NODEID", 0, "Slurm sets it to the node's index in the job").value_or(0);
    SYNCGRAD_CHECK(static_cast<size_t>(node) < counts.size(), RendezvousError, "SLURM_NODEID=", node,
                   " has no entry in SLURM_TASKS_PER_NODE='", *tasks, "' (", counts.size(),
                   " nodes); set SLURM_NTASKS_PER_NODE to the number of tasks on this node");
    e.local_world_size = counts[static_cast<size_t>(node)];
  }
  check_consistent(e, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", local_world_name);
  std::optional<std::string> addr = env("MASTER_ADDR");
  if (addr && !addr->empty()) {
    e.master_addr = *addr;
  } else if (std::optional<std::string> list = env("SLURM_JOB_NODELIST")) {
    e.master_addr = first_host("SLURM_JOB_NODELIST", *list);
  } else if (std::optional<std::string> step_list = env("SLURM_NODELIST")) {
    e.master_addr = first_host("SLURM_NODELIST", *step_list);
  }
  std::optional<std::string> port = env("MASTER_PORT");
  e.master_port = port ? read_port("MASTER_PORT", *port) : kSlurmDefaultPort;
  return e;
}

// SYNCGRAD_JOB_ID, else Slurm's job (and step) id, else "".
std::string read_job_id() {
  if (std::optional<std::string> id = env("SYNCGRAD_JOB_ID"); id && !id->empty()) return *id;
  std::optional<std::string> slurm = env("SLURM_JOB_ID");
  if (!slurm || slurm->empty()) return "";
  std::optional<std::string> step = env("SLURM_STEP_ID");
  return step && !step->empty() ? *slurm + "." + *step : *slurm;
}

std::optional<std::chrono::milliseconds> read_timeout(const char* name, const char* flag) {
  std::optional<std::string> value = env(name);
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
  if (env("RANK") || env("WORLD_SIZE")) {
    e = read_launcher_env();
  } else if (env("SLURM_PROCID")) {
    e = read_slurm_env();
  } else {
    e.source = "defaults";
    if (std::optional<std::string> port = env("MASTER_PORT")) e.master_port = read_port("MASTER_PORT", *port);
  }
  if (std::optional<std::string> addr = env("MASTER_ADDR"); addr && !addr->empty()) e.master_addr = *addr;
  e.store_token = env("SYNCGRAD_STORE_TOKEN").value_or("");
  e.store_served = read_flag("SYNCGRAD_STORE_SERVED");
  e.job_id = read_job_id();
  e.timeout = read_timeout("SYNCGRAD_TIMEOUT", "--timeout");
  e.rendezvous_timeout = read_timeout("SYNCGRAD_RENDEZVOUS_TIMEOUT", "--rendezvous-timeout");
  if (require_master) {
    SYNCGRAD_CHECK(!e.master_addr.empty(), RendezvousError, "MASTER_ADDR is not set (", e.source, ", rank ", e.rank,
                   " of ", e.world_size,
                   "); env:// needs the host of rank 0: export MASTER_ADDR=<that host> or start the job with "
                   "syncgrad-launch, which sets it");
    SYNCGRAD_CHECK(e.master_port != 0, RendezvousError, "MASTER_PORT is not set (", e.source,
                   ", MASTER_ADDR=", e.master_addr,
                   "); env:// needs the port of the job's store: export MASTER_PORT=<a free port, e.g. 29500> on every "
                   "rank, or start the job with syncgrad-launch, which sets it");
  }
  return e;
}

bool launched_distributed() { return read_launch_env().world_size > 1; }

}  // namespace syncgrad::distributed
