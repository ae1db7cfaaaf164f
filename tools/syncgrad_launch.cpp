// syncgrad-launch: starts the ranks of a job on this node, torchrun-like. Node 0 serves the job's TCPStore
// (on a free port unless --master-port is given); every rank gets torchrun's environment variables, its
// output prefixed with [rankN], and the job is stopped as a whole when one rank fails (and dies with the
// launcher when it is killed).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "distributed/tcp_store.h"
#include "tools/launch/errors.h"
#include "tools/launch/options.h"
#include "tools/launch/rank_env.h"
#include "tools/launch/signal_channel.h"
#include "tools/launch/supervisor.h"
#include "tools/launch/token.h"

namespace launch = syncgrad::launch;

namespace {

int launch_job(const launch::LaunchOptions& options) {
  launch::StoreAddress store{options.master_addr, options.master_port, launch::job_token(options)};
  const std::string job_id = launch::job_id(store.token);
  // Signals are blocked before the store's server thread exists, so they all reach the supervisor.
  launch::SignalChannel signals;
  std::unique_ptr<syncgrad::distributed::TCPStoreServer> server;
  if (options.node_rank == 0) {
    server = std::make_unique<syncgrad::distributed::TCPStoreServer>(store.host, store.port, store.token);
    store.port = server->port();
  }
  launch::Supervisor supervisor(signals, options.grace_period);
  std::vector<std::string> base = launch::current_environment();
  for (int local = 0; local < options.nproc_per_node; ++local) {
    supervisor.start(options.node_rank * options.nproc_per_node + local, options.command,
                     launch::rank_environment(base, options, local, store, job_id));
  }
  return supervisor.run();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "syncgrad-launch [OPTIONS] PROGRAM [ARGS...]: runs PROGRAM once per rank of a (multi-node) job, "
      "like torchrun"};
  launch::LaunchFlags flags;
  launch::add_flags(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return launch_job(launch::check_flags(flags, app.remaining()));
  } catch (const launch::UsageError& e) {
    std::fprintf(stderr, "syncgrad-launch: error: %s\n", e.what());
    return 2;
  } catch (const syncgrad::Error& e) {
    std::fprintf(stderr, "syncgrad-launch: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-launch: unexpected error: %s\n", e.what());
    return 1;
  }
}
