// The attempt loop of a coordinated multi-node job (see multinode_job.h and docs/DESIGN.md, "Multi-node
// restarts"): rendezvous, run this node's ranks while watching the store, agree on what comes next.
#include "tools/launch/multinode_job.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>

#include "distributed/errors.h"
#include "distributed/launch_env.h"
#include "distributed/tcp_store.h"
#include "tensor/check.h"
#include "tools/launch/errors.h"
#include "tools/launch/fd_io.h"
#include "tools/launch/hang_limit.h"
#include "tools/launch/node_rendezvous.h"
#include "tools/launch/rank_env.h"
#include "tools/launch/supervisor.h"
#include "tools/launch/token.h"
#include "tools/launch/wait_status.h"

namespace syncgrad::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often a launcher looks at the store (stop record, heartbeat) while its ranks run or it waits.
constexpr milliseconds kTick{500};
// A node whose launcher has not beaten for this long is lost (node 0 posts a failure naming it).
constexpr milliseconds kNodeSilence{15'000};
// An elastic job's rendezvous, once MIN nodes joined, waits this long (at most the rendezvous timeout) for more.
constexpr milliseconds kLastCall{30'000};
// A store request of a launcher (not a rendezvous wait) that gets no answer for this long: node 0 is unreachable.
constexpr milliseconds kStoreReplyTimeout{30'000};
// Node 0 waits this long at most for the other nodes to read the job's end before it closes the store.
constexpr milliseconds kLeaveWait{10'000};

void report(const std::string& line) { write_all(STDERR_FILENO, "syncgrad-launch: " + line + "\n"); }

std::string signal_name(int sig) { return std::string("SIG") + (sigabbrev_np(sig) ? sigabbrev_np(sig) : "?"); }

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

// A stop signal that reached the launcher outside the supervisor's loop (during a rendezvous or a wait).
struct Interrupted {
  int signal = 0;
};

class MultinodeJob {
 public:
  MultinodeJob(const LaunchOptions& options, SignalChannel& signals)
      : options_(options),
        signals_(signals),
        token_(job_token(options)),
        job_id_(job_id(token_)),
        rendezvous_timeout_(options.rendezvous_timeout
                                ? *distributed::parse_timeout_seconds(*options.rendezvous_timeout)
                                : distributed::Store::kDefaultTimeout) {
    self_.node_rank = options.node_rank;
    self_.host = host_name();
    self_.nproc = options.nproc_per_node;
    self_.max_restarts = options.max_restarts;
    self_.min_nnodes = options.min_nodes();
    self_.max_nnodes = options.nnodes;
  }

  int run() {
    connect();
    rendezvous_->set_tick([this] { check_signals(); });
    try {
      return attempts();
    } catch (const Interrupted& i) {
      report(self_.describe() + ": got " + signal_name(i.signal) + " while waiting for the other nodes; exiting");
      return 128 + i.signal;
    }
  }

 private:
  bool is_node0() const { return options_.node_rank == 0; }

  std::string store_where() const {
    return options_.master_addr + ":" + std::to_string(options_.master_port);
  }

  // The message for a lost connection to node 0's store: node 0 is the job's single point of failure.
  std::string node0_lost(const std::string& what) const {
    return self_.describe() + ": lost node 0 (" + options_.master_addr + "), whose syncgrad-launch serves the job's " +
           "store at " + store_where() + ": " + what +
           "; the job cannot go on without node 0 (it is the job's single point of failure): restart the job on "
           "every node (it resumes from its checkpoints)";
  }

  void connect() {
    if (is_node0()) {
      launcher_store_server_ =
          std::make_unique<distributed::TCPStoreServer>(options_.master_addr, options_.master_port, token_);
    }
    distributed::TCPStoreOptions store_options;
    store_options.timeout = rendezvous_timeout_;
    store_options.token = token_;
    try {
      store_ = std::make_unique<distributed::TCPStore>(options_.master_addr, options_.master_port, store_options);
    } catch (const distributed::DistributedError& e) {
      throw LaunchError(self_.describe() + ": cannot reach node 0's syncgrad-launch (the job's store at " +
                        store_where() + ") within --rendezvous-timeout: " + e.what() +
                        "; start node 0's launcher, and pass the same --master-addr, --master-port and token to every node");
    }
    store_->set_timeout(kStoreReplyTimeout);
    rendezvous_ = std::make_unique<NodeRendezvous>(*store_, self_, rendezvous_timeout_,
                                                   std::min(kLastCall, rendezvous_timeout_));
  }

  // Throws Interrupted when a stop signal is pending; drops SIGCHLD (no ranks run here).
  void check_signals() {
    while (int sig = signals_.next()) {
      if (sig != SIGCHLD) throw Interrupted{sig};
    }
  }

  int attempts() {
    int k = is_node0() ? 0 : guarded([&] { return rendezvous_->current_attempt(); });
    std::optional<Membership> previous;
    std::optional<StopRecord> previous_stop;
    for (;;) {
      std::optional<Membership> membership = is_node0() ? close_attempt(k, previous, previous_stop) : enter_attempt(k);
      if (!membership) {  // late for attempt k: it ended (or was asked to end) without this node
        StopRecord held = *late_stop_;
        if (held.kind == StopRecord::Kind::kEnd) return held.status;
        ++k;
        continue;
      }
      AttemptResult result = run_attempt(k, *membership);
      if (result.leave) return leave(k, *membership, result.status);
      previous = membership;
      previous_stop = result.stop;
      ++k;
    }
  }

  // Runs a store request; on a node other than 0 a lost store becomes the LaunchError naming node 0.
  template <class Fn>
  std::invoke_result_t<Fn> guarded(Fn&& fn) {
    if (is_node0()) return fn();
    try {
      return fn();
    } catch (const LaunchError&) {
      throw;
    } catch (const distributed::DistributedError& e) {
      throw LaunchError(node0_lost(e.what()));
    }
  }

  std::optional<Membership> close_attempt(int k, const std::optional<Membership>& previous,
                                          const std::optional<StopRecord>& previous_stop) {
    try {
      return rendezvous_->close(k, previous, previous_stop, [this] {
        ranks_store_.reset();
        ranks_store_ = std::make_unique<distributed::TCPStoreServer>(options_.master_addr, 0, token_);
        return ranks_store_->port();
      });
    } catch (const Interrupted& i) {
      rendezvous_->publish_abort(k, "attempt " + std::to_string(k) + ": node 0's syncgrad-launch got " +
                                        signal_name(i.signal) + " during the rendezvous; the job ends");
      wait_for_others_to_leave(k, rendezvous_->joined_count(k) - 1);
      throw;
    } catch (const LaunchError&) {
      wait_for_others_to_leave(k, rendezvous_->joined_count(k) - 1);
      throw;
    }
  }

  // A node other than 0: joins attempt k, or, when attempt k was closed without this node, asks for a restart
  // (it is back, or new in an elastic job) and returns nothing, with late_stop_ saying how attempt k ends.
  std::optional<Membership> enter_attempt(int k) {
    return guarded([&]() -> std::optional<Membership> {
      std::optional<Membership> closed = rendezvous_->membership(k);
      if (!closed) {
        rendezvous_->join(k);
        try {
          closed = rendezvous_->await_membership(k);
        } catch (const LaunchError&) {
          rendezvous_->mark_left(k);
          throw;
        }
        if (closed->group_rank_of(self_.node_rank) >= 0) return closed;
      }
      std::optional<StopRecord> stop = rendezvous_->stop_record(k);
      if (!stop) {
        const bool member = closed->group_rank_of(self_.node_rank) >= 0;
        StopRecord mine = member ? failure_record(1,
                                                  self_.describe() + " is back: its launcher of attempt " +
                                                      std::to_string(k) + " is gone",
                                                  closed->restarts_used, options_.max_restarts)
                                 : StopRecord{StopRecord::Kind::kAdmit, 0, self_.describe() + " joins the job"};
        stop = rendezvous_->post_stop(k, mine);
      }
      report(self_.describe() + ": attempt " + std::to_string(k) + " runs without this node (" + closed->describe() +
             "): " + describe_stop(*stop, closed->restarts_used, options_.max_restarts));
      if (stop->kind == StopRecord::Kind::kEnd) rendezvous_->mark_left(k);
      late_stop_ = stop;
      return std::nullopt;
    });
  }

  struct AttemptResult {
    bool leave = false;  // the job ends here with `status`
    int status = 0;
    std::optional<StopRecord> stop;  // what ended the attempt (none: all ranks succeeded)
  };

  std::vector<std::string> rank_env(int k, const Membership& m, int group_rank, int local) const {
    LaunchOptions placed = options_;
    placed.node_rank = group_rank;
    placed.nnodes = static_cast<int>(m.nodes.size());
    StoreAddress ranks_store{options_.master_addr, m.ranks_store_port, token_};
    std::vector<std::string> env =
        rank_environment(launch::current_environment(), placed, local, ranks_store, job_id_, k);
    if (options_.elastic()) {
      std::erase_if(env, [](const std::string& e) { return e.rfind("SYNCGRAD_ELASTIC=", 0) == 0; });
      env.push_back("SYNCGRAD_ELASTIC=1");
    }
    return env;
  }

  // Node 0: a member silent for longer than kNodeSilence is lost; posts the failure and returns it.
  std::optional<StopRecord> check_silent_nodes(int k, const Membership& m) {
    const auto now = Clock::now();
    for (const NodeInfo& n : m.nodes) {
      if (n.node_rank == 0) continue;
      const int64_t count = rendezvous_->beats(k, n.node_rank);
      auto [it, fresh] = last_beats_.try_emplace(n.node_rank, count, now);
      if (fresh || it->second.first != count) {
        it->second = {count, now};
      } else if (now - it->second.second > kNodeSilence) {
        return rendezvous_->post_stop(
            k, failure_record(1,
                              n.describe() + " is lost: its syncgrad-launch has not been heard from for " +
                                  std::to_string(kNodeSilence.count() / 1000) + " s",
                              m.restarts_used, options_.max_restarts));
      }
    }
    return std::nullopt;
  }

  // One look at the store while this node's ranks run or it waits: heartbeat, lost nodes, stop record.
  std::optional<StopRecord> look(int k, const Membership& m) {
    return guarded([&]() -> std::optional<StopRecord> {
      if (is_node0()) {
        if (std::optional<StopRecord> lost = check_silent_nodes(k, m)) return lost;
      } else {
        rendezvous_->beat(k);
      }
      return rendezvous_->stop_record(k);
    });
  }

  AttemptResult run_attempt(int k, const Membership& m) {
    const int group_rank = m.group_rank_of(self_.node_rank);
    const int first = group_rank * options_.nproc_per_node;
    const std::string ranks = options_.nproc_per_node == 1
                                  ? "rank " + std::to_string(first)
                                  : "ranks " + std::to_string(first) + ".." +
                                        std::to_string(first + options_.nproc_per_node - 1);
    report("attempt " + std::to_string(k) + ": " + std::to_string(m.nodes.size()) + " node(s): " + m.describe() +
           "; " + self_.describe() + " runs " + ranks + " of " + std::to_string(m.world_size()));
    last_beats_.clear();
    std::optional<StopRecord> stop;
    std::string lost;  // node 0 lost, while the ranks ran
    Supervisor supervisor(signals_, options_.grace_period);
    supervisor.set_hang_limit(hang_limit(options_));
    Supervisor::Watch watch;
    watch.interval = kTick;
    watch.poll = [&]() -> std::optional<std::string> {
      if (stop || !lost.empty()) return std::nullopt;
      try {
        stop = look(k, m);
      } catch (const LaunchError& e) {
        lost = e.what();
        return std::string("lost the job's store on node 0");
      }
      if (!stop) return std::nullopt;
      return describe_stop(*stop, m.restarts_used, options_.max_restarts);
    };
    watch.on_failure = [&](int rank, int status) {
      if (stop || !lost.empty()) return;
      try {
        stop = guarded([&] {
          return rendezvous_->post_stop(k, failure_record(exit_code_of(status),
                                                          self_.describe() + ": rank " + std::to_string(rank) + " " +
                                                              describe_wait_status(status),
                                                          m.restarts_used, options_.max_restarts));
        });
      } catch (const LaunchError& e) {
        lost = e.what();
      }
    };
    supervisor.set_watch(watch);
    for (int local = 0; local < options_.nproc_per_node; ++local) {
      supervisor.start(first + local, options_.command, rank_env(k, m, group_rank, local));
    }
    const int status = supervisor.run();
    if (!lost.empty()) throw LaunchError(lost);
    if (supervisor.got_stop_signal()) {
      StopRecord mine{StopRecord::Kind::kEnd, status, self_.describe() + ": syncgrad-launch was told to stop"};
      guarded([&] { rendezvous_->post_stop(k, mine); });
      return {true, status, mine};
    }
    if (!stop && status == 0) return finish_attempt(k, m);
    if (!stop) stop = guarded([&] { return rendezvous_->stop_record(k); });
    SYNCGRAD_CHECK(stop.has_value(), LaunchError, self_.describe(), ": attempt ", k,
                   " ended with status ", status, " but no node posted why");
    if (!supervisor.stopped_by_watch()) report(describe_stop(*stop, m.restarts_used, options_.max_restarts));
    if (stop->kind == StopRecord::Kind::kEnd) return {true, stop->status, stop};
    return {false, 0, stop};
  }

  // This node's ranks all succeeded: waits until every node's have, or a node posts a stop record.
  AttemptResult finish_attempt(int k, const Membership& m) {
    guarded([&] { rendezvous_->mark_done(k); });
    try {
      for (;;) {
        if (guarded([&] { return rendezvous_->done_count(k); }) >= static_cast<int64_t>(m.nodes.size())) {
          return {true, 0, std::nullopt};
        }
        if (std::optional<StopRecord> stop = look(k, m)) {
          report(self_.describe() + " had finished: " + describe_stop(*stop, m.restarts_used, options_.max_restarts));
          if (stop->kind == StopRecord::Kind::kEnd) return {true, stop->status, stop};
          return {false, 0, stop};
        }
        pause(kTick);
      }
    } catch (const Interrupted& i) {
      StopRecord mine{StopRecord::Kind::kEnd, 128 + i.signal,
                      self_.describe() + ": syncgrad-launch got " + signal_name(i.signal)};
      guarded([&] { rendezvous_->post_stop(k, mine); });
      return {true, mine.status, mine};
    }
  }

  // Sleeps for `time`, waking for a stop signal (then Interrupted).
  void pause(milliseconds time) {
    pollfd fd{signals_.fd(), POLLIN, 0};
    poll(&fd, 1, static_cast<int>(time.count()));
    check_signals();
  }

  // The job ends here: node 0 waits (a little) until the other nodes have read so, then closes the store.
  int leave(int k, const Membership& m, int status) {
    if (!is_node0()) {
      try {
        rendezvous_->mark_left(k);
      } catch (const distributed::DistributedError&) {
        // node 0 closed the store already: nothing left to tell it.
      }
      return status;
    }
    wait_for_others_to_leave(k, static_cast<int>(m.nodes.size()) - 1);
    return status;
  }

  void wait_for_others_to_leave(int k, int others) {
    const auto deadline = Clock::now() + kLeaveWait;
    while (rendezvous_->left_count(k) < others && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  const LaunchOptions& options_;
  SignalChannel& signals_;
  std::string token_;
  std::string job_id_;
  milliseconds rendezvous_timeout_;
  NodeInfo self_;
  std::unique_ptr<distributed::TCPStoreServer> launcher_store_server_;  // node 0: the job's store, all attempts
  std::unique_ptr<distributed::TCPStoreServer> ranks_store_;            // node 0: this attempt's ranks' store
  std::unique_ptr<distributed::TCPStore> store_;
  std::unique_ptr<NodeRendezvous> rendezvous_;
  std::optional<StopRecord> late_stop_;
  std::map<int, std::pair<int64_t, Clock::time_point>> last_beats_;  // node 0: beat count, when it last changed
};

}  // namespace

int run_multinode_job(const LaunchOptions& options, SignalChannel& signals) {
  return MultinodeJob(options, signals).run();
}

}  // namespace syncgrad::launch
