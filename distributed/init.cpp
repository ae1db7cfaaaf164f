// init_process_group / destroy_process_group: parse the init method, settle the timeouts (the program's, else
// the launcher's SYNCGRAD_TIMEOUT / SYNCGRAD_RENDEZVOUS_TIMEOUT, else the defaults), meet the other ranks
// through a store (TCPStore served by rank 0 or the launcher, FileStore, or an in-process HashStore for world
// size 1), check that ranks belong to one job, agree on the world size and that no rank appears twice, then
// build the backend's group.
#include "distributed/init.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <mutex>

#include "distributed/errors.h"
#include "distributed/file_store.h"
#include "distributed/hash_store.h"
#include "distributed/job_identity.h"
#include "distributed/launch_env.h"
#include "distributed/rendezvous_report.h"
#include "distributed/route_address.h"
#include "distributed/socket.h"
#include "distributed/tcp_store.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

namespace {

struct DefaultGroup {
  std::mutex mutex;
  std::shared_ptr<ProcessGroup> group;
  std::shared_ptr<Store> store;
  int generation = 0;  // how many groups this process has initialised: each gets a fresh store namespace
};

DefaultGroup& state() {
  static DefaultGroup instance;
  return instance;
}

struct Endpoint {
  std::string host;
  uint16_t port = 0;
};

// How long a second RANK=0 spends asking the process that holds its port who it is.
constexpr std::chrono::milliseconds kHolderProbeTimeout{3000};

std::string millis(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

// The collective timeout: the program's (InitOptions::timeout, else a group.timeout changed from its
// default), else $SYNCGRAD_TIMEOUT, else the default.
std::chrono::milliseconds collective_timeout(const InitOptions& options, const LaunchEnv& env) {
  const std::chrono::milliseconds standard = ProcessGroupOptions{}.timeout;
  std::chrono::milliseconds timeout = env.timeout.value_or(standard);
  if (options.timeout) {
    timeout = *options.timeout;
  } else if (options.group.timeout != standard) {
    timeout = options.group.timeout;
  }
  SYNCGRAD_CHECK(timeout.count() > 0, ValueError, "init_process_group: the collective timeout is ", millis(timeout),
                 "; it must be positive, e.g. std::chrono::seconds(600)");
  return timeout;
}

std::chrono::milliseconds rendezvous_timeout(const InitOptions& options, const LaunchEnv& env) {
  const std::chrono::milliseconds timeout =
      options.store_timeout.value_or(env.rendezvous_timeout.value_or(Store::kDefaultTimeout));
  SYNCGRAD_CHECK(timeout.count() > 0, ValueError, "init_process_group: the rendezvous timeout (store_timeout) is ",
                 millis(timeout), "; it must be positive, e.g. std::chrono::seconds(300)");
  return timeout;
}

// Who holds the port this rank 0 could not serve on, when it is a syncgrad store whose rank 0 said who it is
// (as a whole error message); "" when it is something else, whose port-in-use error then stands.
std::string holder_of(const Endpoint& master, const LaunchEnv& env, std::chrono::milliseconds timeout) {
  const std::string where = net::host_port(master.host, master.port);
  try {
    TCPStoreOptions probe_options;
    probe_options.token = env.store_token;
    probe_options.timeout = std::min(timeout, kHolderProbeTimeout);
    TCPStore probe(master.host, master.port, probe_options);
    const std::string owner = job_identity::store_owner(probe, probe_options.timeout);
    if (owner.empty()) return "";
    const std::optional<std::string> job = job_identity::published_job(probe);
    if (job && *job != env.job_id) {
      return "rank 0: the port of the store at " + where + " is held by rank 0 of another job, " +
             job_identity::describe_job(*job) + " (" + owner + "), and this process is rank 0 of " +
             job_identity::describe_job(env.job_id) +
             ": two jobs share MASTER_PORT? Give each job its own MASTER_PORT (syncgrad-launch picks a free one)";
    }
    return "rank 0 of this job is already taken by " + owner + " (the store at " + where +
           "): two processes were started with RANK=0; give every process its own RANK in 0..WORLD_SIZE-1 "
           "(syncgrad-launch does), or stop the earlier run first";
  } catch (const Error&) {
    return "";
  }
}

// The job's TCPStore: served here when this is rank 0 and the launcher does not serve it.
std::shared_ptr<TCPStore> tcp_store(const Endpoint& master, bool is_server, const LaunchEnv& env,
                                 std::chrono::milliseconds timeout) {
  TCPStoreOptions store_options;
  store_options.is_server = is_server;
  store_options.timeout = timeout;
  store_options.token = env.store_token;
  std::shared_ptr<TCPStore> store;
  try {
    store = std::make_shared<TCPStore>(master.host, master.port, store_options);
  } catch (const RendezvousError&) {
    if (!is_server) throw;
    const std::string holder = holder_of(master, env, timeout);
    if (holder.empty()) throw;
    throw RendezvousError(holder);
  }
  if (is_server) job_identity::record_store_owner(*store);
  return store;
}

Endpoint parse_tcp(const std::string& init_method) {
  const std::string rest = init_method.substr(6);
  const size_t colon = rest.rfind(':');
  SYNCGRAD_CHECK(colon != std::string::npos && colon != 0, ValueError, "init_method ", init_method,
                 " is not tcp://HOST:PORT");
  Endpoint e;
  e.host = rest.substr(0, colon);
  int port = 0;
  try {
    size_t used = 0;
    port = std::stoi(rest.substr(colon + 1), &used);
    if (used != rest.size() - colon - 1) port = 0;
  } catch (const std::exception&) {
    port = 0;
  }
  SYNCGRAD_CHECK(port >= 1 && port <= 65535, ValueError, "init_method ", init_method,
                 ": port must be a number in 1..65535");
  e.port = static_cast<uint16_t>(port);
  return e;
}

// Gloo writes to its sockets without MSG_NOSIGNAL, so a peer that died would kill this process with SIGPIPE
// (status 141, no word said) instead of failing the collective with a PeerError naming it. SIGPIPE is ignored,
// as Python (and so PyTorch) does, unless the program installed its own handler.
void ignore_sigpipe_unless_handled() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
}

// Every rank claims its number once per generation; a second claim means two processes got the same RANK.
void check_rank_unique_and_world_agreed(Store& store, int rank, int world_size) {
  SYNCGRAD_CHECK(store.add("rank_claims/" + std::to_string(rank), 1) <= 1, RendezvousError, "rank ", rank,
                 " joined twice: two processes were started with RANK=", rank,
                 "; give every process its own RANK in 0..WORLD_SIZE-1 (syncgrad-launch does)");
  const std::string mine = std::to_string(world_size);
  const std::string agreed = to_string(store.compare_set("world_size", {}, to_bytes(mine)));
  SYNCGRAD_CHECK(agreed == mine, RendezvousError, "rank ", rank, " was started with WORLD_SIZE=", mine,
                 " but an earlier rank with WORLD_SIZE=", agreed, "; start every rank with the same WORLD_SIZE");
}

}  // namespace

std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options) {
  DefaultGroup& s = state();
  std::lock_guard lock(s.mutex);
  SYNCGRAD_CHECK(
      !s.group, DistributedError,
      "init_process_group: the default process group is already initialised; call destroy_process_group() first");
  const std::string& method = options.init_method;
  const bool is_env = method == "env://";
  const bool is_tcp = method.rfind("tcp://", 0) == 0;
  const bool is_file = method.rfind("file://", 0) == 0;
  SYNCGRAD_CHECK(is_env || is_tcp || is_file, ValueError, "init_method \"", method,
                 "\" is not one of env://, tcp://HOST:PORT, file:///PATH");
  const LaunchEnv env = read_launch_env(false);
  const int world_size = options.world_size >= 0 ? options.world_size : env.world_size;
  const int rank = options.rank >= 0 ? options.rank : env.rank;
  SYNCGRAD_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, RendezvousError, "init_process_group: rank ", rank,
                 " is outside world size ", world_size, "; ranks are 0..WORLD_SIZE-1");
  ProcessGroupOptions group_options = options.group;
  if (group_options.device_index < 0) group_options.device_index = env.local_rank;
  group_options.timeout = collective_timeout(options, env);
  const std::chrono::milliseconds store_timeout = rendezvous_timeout(options, env);

  std::shared_ptr<Store> store;
  std::string where;          // the store, for messages
  bool rank0_serves = false;  // rank 0 serves the TCPStore (not the launcher): it publishes the job id first
  if (world_size == 1) {
    store = std::make_shared<HashStore>(store_timeout);
  } else if (is_file) {
    where = "file " + method.substr(7);
    store = std::make_shared<FileStore>(method.substr(7), world_size, store_timeout);
  } else {
    Endpoint master;
    if (is_tcp) {
      master = parse_tcp(method);
    } else {
      const LaunchEnv full = read_launch_env(true);
      master = {full.master_addr, full.master_port};
    }
    rank0_serves = !env.store_served;
    std::shared_ptr<TCPStore> tcp = tcp_store(master, rank == 0 && rank0_serves, env, store_timeout);
    where = net::host_port(master.host, tcp->port());
    store = tcp;
    if (group_options.bind_address.empty()) {
      group_options.bind_address = local_address_towards(master.host, master.port);
    }
  }
  if (world_size > 1) {
    job_identity::agree(*store, rank, env.job_id, where, rank0_serves);
    ignore_sigpipe_unless_handled();
  }
  auto scoped = std::make_shared<PrefixStore>("default_pg/" + std::to_string(s.generation), store);
  check_rank_unique_and_world_agreed(*scoped, rank, world_size);
  const bool report = options.log_rendezvous && world_size > 1;
  if (report) rendezvous_report::count_host(*scoped);
  std::shared_ptr<ProcessGroup> group;
  try {
    group = make_process_group(options.backend, std::make_shared<PrefixStore>(options.backend, scoped), rank,
                               world_size, group_options);
  } catch (const RendezvousError& e) {
    const std::string strangers = job_identity::turned_away(*store);
    if (strangers.empty()) throw;
    throw RendezvousError(e.what() + strangers);
  }
  if (report && rank == 0) {
    const bool own_placement = options.rank >= 0 && options.world_size >= 0;
    const std::string line = rendezvous_report::line(
        *scoped, own_placement ? "ranks given to init_process_group" : env.source, env.job_id, world_size, where);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  ++s.generation;
  s.group = group;
  s.store = scoped;
  return group;
}

void destroy_process_group() {
  DefaultGroup& s = state();
  std::lock_guard lock(s.mutex);
  s.group.reset();
  s.store.reset();
}

bool is_initialized() {
  DefaultGroup& s = state();
  std::lock_guard lock(s.mutex);
  return s.group != nullptr;
}

std::shared_ptr<ProcessGroup> default_group_ptr() {
  DefaultGroup& s = state();
  std::lock_guard lock(s.mutex);
  SYNCGRAD_CHECK(
      s.group, DistributedError,
      "no default process group: call init_process_group() first (syncgrad-launch sets the environment it reads)");
  return s.group;
}

ProcessGroup& default_group() { return *default_group_ptr(); }

int get_rank() {
  DefaultGroup& s = state();
  std::lock_guard lock(s.mutex);
  return s.group ? s.group->rank() : 0;
}

int get_world_size() {
  DefaultGroup& s = state();
  std::lock_guard lock(s.mutex);
  return s.group ? s.group->size() : 1;
}

std::shared_ptr<Store> default_store() {
  DefaultGroup& s = state();
  std::lock_guard lock(s.mutex);
  SYNCGRAD_CHECK(s.store, DistributedError, "no default process group: call init_process_group() first");
  return s.store;
}

}  // namespace syncgrad::distributed
