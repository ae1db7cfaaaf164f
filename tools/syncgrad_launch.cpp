// syncgrad-launch: starts the ranks of a job on this node, torchrun-like. Node 0 serves the job's TCPStore
// (on a free port unless --master-port is given); every rank gets torchrun's environment variables, its
// output prefixed with [rankN], and the job is stopped as a whole when one rank fails (and dies with the
// launcher when it is killed). With --max-restarts N, a failed job is started again (all ranks, a fresh store) up to
// N times; each attempt's ranks see SYNCGRAD_RESTART_COUNT and resume from their own checkpoints. Several nodes
// with restarts, or an elastic --nnodes MIN:MAX, run as a coordinated job (tools/launch/multinode_job.h). Under
// srun, one launcher per node takes the layout flags not given from the Slurm step (tools/launch/slurm_layout.h).
#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "distributed/scheduler_env.h"
#include "distributed/tcp_store.h"
#include "tools/launch/errors.h"
#include "tools/launch/hang_limit.h"
#include "tools/launch/multinode_job.h"
#include "tools/launch/options.h"
#include "tools/launch/rank_env.h"
#include "tools/launch/restart_policy.h"
#include "tools/launch/signal_channel.h"
#include "tools/launch/supervisor.h"
#include "tools/launch/token.h"

namespace launch = syncgrad::launch;

namespace {

// The job's store on node 0 for one attempt. A fixed --master-port is bound again (SO_REUSEADDR, so the last
// attempt's connections in TIME_WAIT do not block it); while another program holds it, retried for a while.
std::unique_ptr<syncgrad::distributed::TCPStoreServer> serve_store(const launch::StoreAddress& store,
                                                                  bool retry) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    try {
      return std::make_unique<syncgrad::distributed::TCPStoreServer>(store.host, store.port, store.token);
    } catch (const syncgrad::Error& e) {
      if (!retry) throw;
      if (std::chrono::steady_clock::now() >= give_up) {
        throw launch::LaunchError("cannot serve the job's store again for the restart on --master-port " +
                                  std::to_string(store.port) + " (still in use after 30 s): " + e.what() +
                                  "; leave --master-port out to get a free port on every attempt");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

// One attempt: a fresh store (node 0), every rank of this node started with SYNCGRAD_RESTART_COUNT=attempt.
int run_attempt(const launch::LaunchOptions& options, launch::SignalChannel& signals, launch::StoreAddress store,
                const std::string& job_id, int attempt, launch::AttemptEnd& end) {
  std::unique_ptr<syncgrad::distributed::TCPStoreServer> server;
  if (options.node_rank == 0) {
    server = serve_store(store, attempt > 0 && store.port != 0);
    store.port = server->port();
  }
  launch::Supervisor supervisor(signals, options.grace_period);
  supervisor.set_hang_limit(launch::hang_limit(options));
  std::vector<std::string> base = launch::current_environment();
  for (int local = 0; local < options.nproc_per_node; ++local) {
    supervisor.start(options.node_rank * options.nproc_per_node + local, options.command,
                     launch::rank_environment(base, options, local, store, job_id, attempt));
  }
  int status = supervisor.run();
  end = {supervisor.failed_rank(), supervisor.failure_status(), supervisor.got_stop_signal()};
  return status;
}

// A stop signal that came between two attempts (the ranks all ended): its number, or 0.
int pending_stop_signal(launch::SignalChannel& signals) {
  int stop = 0;
  while (int sig = signals.next()) {
    if (sig != SIGCHLD && stop == 0) stop = sig;
  }
  return stop;
}

int launch_job(const launch::LaunchOptions& options) {
  if (options.coordinated()) {
    launch::SignalChannel signals;
    return launch::run_multinode_job(options, signals);
  }
  launch::StoreAddress store{options.master_addr, options.master_port, launch::job_token(options)};
  const std::string job_id = launch::job_id(store.token, options.slurm_job);
  if (!options.layout_note.empty()) std::fprintf(stderr, "syncgrad-launch: %s\n", options.layout_note.c_str());
  // Signals are blocked before the store's server thread exists, so they all reach the supervisor.
  launch::SignalChannel signals;
  for (int attempt = 0;; ++attempt) {
    launch::AttemptEnd end;
    int status = run_attempt(options, signals, store, job_id, attempt, end);
    launch::RestartDecision decision = launch::decide_restart(end, attempt, options.max_restarts);
    if (decision.restart) {
      if (int sig = pending_stop_signal(signals)) {
        std::fprintf(stderr, "syncgrad-launch: got SIG%s; not restarting\n", sigabbrev_np(sig));
        return status;
      }
    }
    if (!decision.message.empty()) std::fprintf(stderr, "syncgrad-launch: %s\n", decision.message.c_str());
    if (!decision.restart) return status;
  }
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
    return launch_job(launch::check_flags(flags, app.remaining(), syncgrad::distributed::read_slurm_step()));
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
