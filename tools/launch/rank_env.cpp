// Builds each rank's environment from the launcher's: torchrun's variables, the store's address and token, the
// job's id, the attempt (restart count) and the timeouts given on the command line.
#include "tools/launch/rank_env.h"

#include <map>
#include <utility>

extern char** environ;

namespace syncgrad::launch {
namespace {

std::string name_of(const std::string& entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::vector<std::string> rank_environment(const std::vector<std::string>& base, const LaunchOptions& options,
                                          int local_rank, const StoreAddress& store, const std::string& job_id,
                                          int restart_count) {
  int rank = options.node_rank * options.nproc_per_node + local_rank;
  std::map<std::string, std::string> set = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"WORLD_SIZE", std::to_string(options.world_size())},
      {"LOCAL_WORLD_SIZE", std::to_string(options.nproc_per_node)},
      {"GROUP_RANK", std::to_string(options.node_rank)},
      {"GROUP_WORLD_SIZE", std::to_string(options.nnodes)},
      {"ROLE_RANK", std::to_string(rank)},
      {"ROLE_WORLD_SIZE", std::to_string(options.world_size())},
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", store.host},
      {"MASTER_PORT", std::to_string(store.port)},
      {"SYNCGRAD_STORE_TOKEN", store.token},
      {"SYNCGRAD_STORE_SERVED", "1"},
      {"SYNCGRAD_LAUNCHER", "syncgrad-launch"},
      {"SYNCGRAD_RESTART_COUNT", std::to_string(restart_count)},
  };
  if (!job_id.empty()) set["SYNCGRAD_JOB_ID"] = job_id;
  if (options.timeout) set["SYNCGRAD_TIMEOUT"] = *options.timeout;
  if (options.rendezvous_timeout) set["SYNCGRAD_RENDEZVOUS_TIMEOUT"] = *options.rendezvous_timeout;
  std::vector<std::string> env;
  bool has_threads = false;
  for (const std::string& entry : base) {
    std::string name = name_of(entry);
    if (name == "OMP_NUM_THREADS") has_threads = true;
    if (set.count(name) == 0) env.push_back(entry);
  }
  if (!has_threads) env.push_back("OMP_NUM_THREADS=1");
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace syncgrad::launch
