// Supervisor: runs the ranks of this node until they all end. It forwards their output line by line with a
// "[rankN]: " prefix (stdout to stdout, stderr to stderr) and, when a rank fails or the launcher is told to
// stop (SIGINT, SIGTERM, SIGHUP), stops every rank: SIGTERM (and SIGCONT, for a stopped rank) to each rank's
// process group, SIGKILL after the grace period (at once on a second signal). SIGUSR1, a scheduler's notice of
// preemption (sbatch --signal=USR1@60), is passed on to each rank's process group and nothing more: a rank that
// handles it (distributed/preemption.h) saves and exits 75, one that does not dies of it, as without the launcher. With a hang limit it also reads each
// rank's heartbeat pipe (distributed/rank_heartbeat.h): a rank that has beaten once and then stays silent for
// longer than the limit is hung (stopped, stuck in a collective, deadlocked) and is killed, which fails the job
// like any other failure (and so restarts it under --max-restarts).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/launch/line_prefixer.h"
#include "tools/launch/signal_channel.h"

namespace syncgrad::launch {

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;

  // What a multi-node launcher adds to the loop (tools/launch/multinode_job.h): a periodic call that may
  // stop all ranks (another node asked for a restart) and word of the first failure as soon as it happens.
  struct Watch {
    std::chrono::milliseconds interval{500};
    // Called every interval while run() waits, also while stopping; a reason stops all ranks (unless they are
    // being stopped already) and is reported as the launcher's line.
    std::function<std::optional<std::string>()> poll;
    // Called once, at the first failing rank (global rank, wait status), before the others are stopped.
    std::function<void(int rank, int status)> on_failure;
  };

  Supervisor(SignalChannel& signals, std::chrono::milliseconds grace_period);
  // Kills (SIGKILL) and reaps the ranks still running, e.g. when starting a later rank failed.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts global rank `rank`; LaunchError when the program cannot be executed.
  void start(int rank, const std::vector<std::string>& command, const std::vector<std::string>& env);

  // Ranks silent on their heartbeat pipe for longer than `limit` are killed as hung (none: not watched).
  void set_hang_limit(std::chrono::milliseconds limit) { hang_limit_ = limit; }

  // Installs the watch for the next run().
  void set_watch(Watch watch) { watch_ = std::move(watch); }

  // Waits until every rank has ended and returns the launcher's exit status: 0 when all succeeded, else
  // the first failing rank's status (128+signal when it was killed), or 128+signal when the launcher was
  // stopped by a signal.
  int run();

  // After run(): the first failing rank and its wait status (none when every rank succeeded), and whether the
  // launcher got a stop signal (SIGINT, SIGTERM, SIGHUP) or passed on a SIGUSR1 at any time -- then the job must
  // not be restarted.
  std::optional<int> failed_rank() const { return failed_rank_; }
  std::optional<int> failure_status() const { return failure_status_; }
  bool got_stop_signal() const { return got_stop_signal_; }
  // Whether the watch's poll stopped the ranks.
  bool stopped_by_watch() const { return stopped_by_watch_; }

 private:
  struct Rank {
    int rank = 0;
    pid_t pid = -1;
    int fds[2] = {-1, -1};  // stdout, stderr read ends (-1 once closed)
    std::unique_ptr<LinePrefixer> prefixers[2];
    bool running = true;
    int heartbeat_fd = -1;                        // read end of its heartbeat pipe (-1 once closed)
    std::optional<Clock::time_point> last_beat;  // watched since its first beat, until it says it is idle
  };

  void read_output(Rank& r, int stream, bool until_drained);
  void read_heartbeat(Rank& r);
  void kill_hung_ranks();
  void close_output(Rank& r, int stream);
  void reap();
  void on_exit(Rank& r, int status);
  void on_signal(int sig);
  void stop(const std::string& why, const char* others);
  void signal_running(int sig);
  int running_count() const;
  int poll_timeout_ms() const;
  void poll_watch();

  SignalChannel& signals_;
  std::chrono::milliseconds grace_period_;
  std::vector<Rank> ranks_;
  bool stopping_ = false;
  bool killed_ = false;
  Clock::time_point kill_at_;
  std::optional<int> failure_status_;  // wait status of the first failing rank
  std::optional<int> failed_rank_;     // its global rank
  bool got_stop_signal_ = false;       // any stop signal, even one that came while already stopping
  int stop_signal_ = 0;                // the signal that stopped the launcher
  Watch watch_;
  std::optional<std::chrono::milliseconds> hang_limit_;
  Clock::time_point next_watch_ = Clock::now();
  bool stopped_by_watch_ = false;
};

}  // namespace syncgrad::launch
