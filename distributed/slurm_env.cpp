// Slurm's side of scheduler_env.h: a task started by srun (read_slurm_task) and its step as syncgrad-launch
// lays a job out over it (read_slurm_step).
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "distributed/env_values.h"
#include "distributed/errors.h"
#include "distributed/scheduler_env.h"
#include "distributed/slurm_nodelist.h"
#include "tensor/check.h"

namespace syncgrad::distributed {
namespace {

using env_values::count;
using env_values::first_set;
using env_values::get;
using env_values::parse_int;

constexpr const char* kSrunFix = "srun sets it for every task; run the job with srun";

// SLURM_STEP_ID (else the older SLURM_STEPID) as text; nullopt outside an srun step.
std::optional<std::string> step_id() {
  std::optional<std::pair<std::string, std::string>> step = first_set({"SLURM_STEP_ID", "SLURM_STEPID"});
  if (!step) return std::nullopt;
  SYNCGRAD_CHECK(parse_int(step->second, 0, 0xffffffffLL), RendezvousError, step->first, "='", step->second,
                 "' is not a step number; ", kSrunFix, " (or unset it outside Slurm)");
  return step->second;
}

// "2(x3),1" -> {2, 2, 2, 1}: Slurm's compressed list of tasks per node.
std::vector<int> parse_tasks_per_node(const std::string& name, const std::string& value) {
  auto malformed = [&] {
    return RendezvousError(name + "='" + value +
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
    std::optional<long long> n = parse_int(count_text, 1, 1 << 20);
    if (!n) throw malformed();
    counts.insert(counts.end(), static_cast<size_t>(repeat), static_cast<int>(*n));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return counts;
}

int node_id() {
  return env_values::optional_count("SLURM_NODEID", 0, "Slurm sets it to the node's index in the step").value_or(0);
}

// The step's task count and the variable it came from.
std::pair<std::string, int> step_tasks(const std::string& procid, const std::string& step) {
  std::optional<std::pair<std::string, std::string>> tasks =
      first_set({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"});
  SYNCGRAD_CHECK(tasks, RendezvousError, "SLURM_STEP_NUM_TASKS and SLURM_NTASKS are not set but SLURM_PROCID=", procid,
                 " and SLURM_STEP_ID=", step,
                 " are; srun sets them all: run the job with srun, or export RANK and WORLD_SIZE");
  return {tasks->first, count(tasks->first.c_str(), tasks->second, 1, "Slurm sets it to the step's task count")};
}

// The tasks on this node and the variable they came from (1 when Slurm says nothing).
std::pair<std::string, int> local_tasks() {
  if (std::optional<std::pair<std::string, std::string>> list =
          first_set({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})) {
    std::vector<int> counts = parse_tasks_per_node(list->first, list->second);
    const int node = node_id();
    SYNCGRAD_CHECK(static_cast<size_t>(node) < counts.size(), RendezvousError, "SLURM_NODEID=", node,
                   " has no entry in ", list->first, "='", list->second, "' (", counts.size(),
                   " nodes); set SLURM_NTASKS_PER_NODE to the number of tasks on this node and unset ", list->first);
    return {list->first, counts[static_cast<size_t>(node)]};
  }
  std::optional<int> per_node = env_values::optional_count("SLURM_NTASKS_PER_NODE", 1, "set it to the tasks per node");
  return {"SLURM_NTASKS_PER_NODE", per_node.value_or(1)};
}

// The step's first node (where task 0 and node 0 run).
std::string first_host() {
  std::optional<std::pair<std::string, std::string>> list =
      first_set({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  if (!list) return "";
  try {
    return first_slurm_host(list->second, list->first);
  } catch (const RendezvousError& e) {
    throw RendezvousError(std::string(e.what()) + "; set MASTER_ADDR to the host of rank 0 to override it");
  }
}

struct Port {
  uint16_t port = kDefaultMasterPort;
  std::string origin = "the default port";
};

// The step's first reserved port (Slurm's MpiParams=ports=...), else one derived from the job and step.
Port step_port(const std::string& step) {
  if (std::optional<std::string> reserved = get("SLURM_STEP_RESV_PORTS"); reserved && !reserved->empty()) {
    const std::string first = reserved->substr(0, reserved->find_first_of(",-"));
    std::optional<long long> port = parse_int(first, 1, 65535);
    SYNCGRAD_CHECK(port, RendezvousError, "SLURM_STEP_RESV_PORTS='", *reserved,
                   "' does not start with a port number; Slurm sets it to the step's reserved ports (e.g. "
                   "'12000-12001'); unset it, or set MASTER_PORT to the port of the job's store");
    return {static_cast<uint16_t>(*port), "the step's first reserved port (SLURM_STEP_RESV_PORTS=" + *reserved + ")"};
  }
  std::optional<std::string> job = get("SLURM_JOB_ID");
  if (!job || job->empty()) return {};
  std::optional<long long> job_number = parse_int(*job, 0, 1LL << 62);
  const long long step_number = *parse_int(step, 0, 0xffffffffLL);
  const uint16_t port = job_number
                            ? derived_port(static_cast<uint64_t>(*job_number), static_cast<uint64_t>(step_number))
                            : derived_port(*job + "." + step);
  return {port, "derived from job " + *job + " step " + step};
}

std::string job_and_step(const std::string& step) {
  std::optional<std::string> job = get("SLURM_JOB_ID");
  return job && !job->empty() ? *job + "." + step : "";
}

}  // namespace

std::optional<SchedulerPlacement> read_slurm_task() {
  std::optional<std::string> procid = get("SLURM_PROCID");
  std::optional<std::string> step = step_id();
  if (!procid || !step) return std::nullopt;
  SchedulerPlacement p;
  p.source = "slurm";
  p.rank_name = "SLURM_PROCID";
  std::tie(p.world_name, p.world_size) = step_tasks(*procid, *step);
  p.rank = count("SLURM_PROCID", *procid, 0, kSrunFix);
  p.local_rank =
      env_values::optional_count("SLURM_LOCALID", 0, "Slurm sets it to the task's index on its node").value_or(0);
  std::string local_world_name;
  std::tie(local_world_name, p.local_world_size) = local_tasks();
  env_values::check_placement(p.rank, p.world_size, p.local_rank, p.local_world_size, p.rank_name, p.world_name,
                              "SLURM_LOCALID", local_world_name);
  // MASTER_ADDR and MASTER_PORT, when set, win (read_launch_env): the node list and ports are not read then.
  std::optional<std::string> addr = get("MASTER_ADDR");
  if (!addr || addr->empty()) p.master_addr = p.local_world_size == p.world_size ? "127.0.0.1" : first_host();
  if (!get("MASTER_PORT")) p.master_port = step_port(*step).port;
  p.job_id = job_and_step(*step);
  p.master_hint = "export MASTER_ADDR=<host of rank 0> in the job script (srun passes it to every task)";
  return p;
}

std::optional<SlurmStep> read_slurm_step() {
  std::optional<std::string> procid = get("SLURM_PROCID");
  std::optional<std::string> step = step_id();
  if (!procid || !step) return std::nullopt;
  SlurmStep s;
  s.job_id = job_and_step(*step);
  s.tasks = step_tasks(*procid, *step).second;
  std::optional<std::pair<std::string, std::string>> nodes = first_set({"SLURM_STEP_NUM_NODES", "SLURM_NNODES"});
  if (nodes) {
    s.nodes = count(nodes->first.c_str(), nodes->second, 1, "Slurm sets it to the step's node count");
  } else if (std::optional<std::string> list = get("SLURM_STEP_NODELIST")) {
    s.nodes = static_cast<int>(expand_slurm_nodelist(*list, "SLURM_STEP_NODELIST").size());
  }
  s.node_id = node_id();
  SYNCGRAD_CHECK(s.node_id < s.nodes, RendezvousError, "SLURM_NODEID=", s.node_id, " is not below the step's ",
                 s.nodes, " nodes; ", kSrunFix);
  s.first_host = first_host();
  const Port port = step_port(*step);
  s.port = port.port;
  s.port_origin = port.origin;
  return s;
}

}  // namespace syncgrad::distributed
