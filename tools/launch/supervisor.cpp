// The launcher's event loop: poll() over the ranks' output pipes and the signalfd, reap ranks on SIGCHLD,
// stop them all on the first failure or on a signal, escalate to SIGKILL after the grace period.
#include "tools/launch/supervisor.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>
#include <vector>

#include "distributed/preemption.h"
#include "tools/launch/fd_io.h"
#include "tools/launch/spawn.h"
#include "tools/launch/wait_status.h"

namespace syncgrad::launch {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr int kHeartbeatSource = 2;  // poll source: a rank's heartbeat pipe (0, 1: its stdout, stderr)
// How often the loop looks for hung ranks while a hang limit is set.
constexpr std::chrono::milliseconds kHangCheck{1000};

void report(const std::string& line) { write_all(STDERR_FILENO, "syncgrad-launch: " + line + "\n"); }

std::string plural(int n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

std::string seconds(std::chrono::milliseconds ms) {
  std::string s = std::to_string(ms.count() / 1000.0);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s + " s";
}

}  // namespace

Supervisor::Supervisor(SignalChannel& signals, std::chrono::milliseconds grace_period)
    : signals_(signals), grace_period_(grace_period) {}

Supervisor::~Supervisor() {
  for (Rank& r : ranks_) {
    if (r.running) {
      kill(-r.pid, SIGKILL);
      waitpid(r.pid, nullptr, 0);
    }
    for (int stream : {0, 1}) {
      if (r.fds[stream] >= 0) close(r.fds[stream]);
    }
    if (r.heartbeat_fd >= 0) close(r.heartbeat_fd);
  }
}

void Supervisor::start(int rank, const std::vector<std::string>& command, const std::vector<std::string>& env) {
  SpawnedProcess p = spawn_process(command, env, signals_.child_defaults());
  Rank& r = ranks_.emplace_back();
  r.rank = rank;
  r.pid = p.pid;
  r.fds[0] = p.stdout_fd;
  r.fds[1] = p.stderr_fd;
  r.heartbeat_fd = p.heartbeat_fd;
  std::string prefix = "[rank" + std::to_string(rank) + "]: ";
  for (int stream : {0, 1}) {
    int out = stream == 0 ? STDOUT_FILENO : STDERR_FILENO;
    r.prefixers[stream] =
        std::make_unique<LinePrefixer>(prefix, [out](std::string_view text) { write_all(out, text); });
  }
}

int Supervisor::running_count() const {
  int n = 0;
  for (const Rank& r : ranks_) n += r.running ? 1 : 0;
  return n;
}

void Supervisor::close_output(Rank& r, int stream) {
  r.prefixers[stream]->finish();
  close(r.fds[stream]);
  r.fds[stream] = -1;
}

void Supervisor::read_output(Rank& r, int stream, bool until_drained) {
  char buffer[kReadChunk];
  while (r.fds[stream] >= 0) {
    ssize_t n = read(r.fds[stream], buffer, sizeof buffer);
    if (n > 0) {
      r.prefixers[stream]->feed(std::string_view(buffer, static_cast<size_t>(n)));
      if (!until_drained) return;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      // A rank that has exited wrote everything before it did; what a leftover child writes later is lost.
      if (until_drained) close_output(r, stream);
      return;
    } else {
      close_output(r, stream);
    }
  }
}

void Supervisor::read_heartbeat(Rank& r) {
  char buffer[256];
  while (r.heartbeat_fd >= 0) {
    ssize_t n = read(r.heartbeat_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {  // the rank (and every child that inherited the pipe) closed it
      close(r.heartbeat_fd);
      r.heartbeat_fd = -1;
      r.last_beat.reset();
      return;
    }
    // The last byte tells the state: 'b' progress, 'i' idle (a process group was destroyed).
    if (buffer[n - 1] == 'i') {
      r.last_beat.reset();
    } else {
      r.last_beat = Clock::now();
    }
  }
}

void Supervisor::kill_hung_ranks() {
  if (!hang_limit_ || stopping_) return;
  const auto now = Clock::now();
  for (Rank& r : ranks_) {
    if (!r.running || !r.last_beat || now - *r.last_beat <= *hang_limit_) continue;
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - *r.last_beat);
    report("rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) + ") has made no progress for " +
           seconds(silent) + " (its heartbeat stopped; the limit is the collective timeout and 5 s): it is hung "
           "(stopped, stuck in a collective or deadlocked); killing it (SIGKILL)");
    r.last_beat.reset();
    kill(-r.pid, SIGKILL);
  }
}

void Supervisor::signal_running(int sig) {
  for (Rank& r : ranks_) {
    if (!r.running) continue;
    kill(-r.pid, sig);
    // A stopped rank (SIGSTOP, a debugger's Ctrl-Z) acts on SIGTERM only once it runs again.
    if (sig == SIGTERM) kill(-r.pid, SIGCONT);
  }
}

void Supervisor::stop(const std::string& why, const char* others) {
  stopping_ = true;
  kill_at_ = Clock::now() + grace_period_;
  int n = running_count();
  if (n > 0) {
    report(why + "; stopping " + others + plural(n, "rank") + " (SIGTERM, then SIGKILL after " +
           seconds(grace_period_) + ")");
  } else {
    report(why);
  }
  signal_running(SIGTERM);
}

void Supervisor::on_exit(Rank& r, int status) {
  r.running = false;
  for (int stream : {0, 1}) read_output(r, stream, true);
  // A rank that saved and stopped on the forwarded signal: the job exits "preempted, resumable" (75), not 128+sig.
  if (stop_signal_ != 0 && exit_code_of(status) == distributed::kPreemptedExitStatus) {
    failure_status_ = status;
    failed_rank_ = r.rank;
  }
  if (!failed(status) || stopping_) return;
  failure_status_ = status;
  failed_rank_ = r.rank;
  if (watch_.on_failure) watch_.on_failure(r.rank, status);
  stop("rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) + ") " + describe_wait_status(status),
       "the other ");
}

// Ranks found ended in one pass are handled signalled ones first: when a busy launcher wakes after a killed or
// crashed rank and the peers that then lost their connection to it have exited too, the job reports the rank
// that died, not the first of its peers in rank order.
void Supervisor::reap() {
  std::vector<std::pair<Rank*, int>> ended;
  for (Rank& r : ranks_) {
    if (!r.running) continue;
    int status = 0;
    pid_t pid;
    do {
      pid = waitpid(r.pid, &status, WNOHANG);
    } while (pid < 0 && errno == EINTR);
    if (pid == r.pid) ended.emplace_back(&r, status);
  }
  std::stable_partition(ended.begin(), ended.end(), [](const auto& e) { return WIFSIGNALED(e.second); });
  for (auto& [rank, status] : ended) on_exit(*rank, status);
}

void Supervisor::on_signal(int sig) {
  std::string name = std::string("SIG") + (sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
  got_stop_signal_ = true;
  if (sig == SIGUSR1) {
    // A preemption notice (sbatch --signal=USR1@60): the ranks decide; those that handle it save and exit 75.
    report("got SIGUSR1; passing it on to " + plural(running_count(), "rank"));
    signal_running(SIGUSR1);
    return;
  }
  if (!stopping_) {
    stop_signal_ = sig;
    stop("got " + name, "");
  } else if (!killed_) {
    report("got " + name + " again; killing the ranks (SIGKILL)");
    killed_ = true;
    signal_running(SIGKILL);
  }
}

int Supervisor::poll_timeout_ms() const {
  auto until = [](Clock::time_point t) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now());
    return static_cast<int>(std::max<long long>(0, left.count()));
  };
  int timeout_ms = -1;
  if (stopping_ && !killed_) timeout_ms = until(kill_at_);
  if (watch_.poll) timeout_ms = timeout_ms < 0 ? until(next_watch_) : std::min(timeout_ms, until(next_watch_));
  if (hang_limit_) {
    const int check = static_cast<int>(kHangCheck.count());
    timeout_ms = timeout_ms < 0 ? check : std::min(timeout_ms, check);
  }
  return timeout_ms;
}

void Supervisor::poll_watch() {
  if (!watch_.poll || Clock::now() < next_watch_) return;
  next_watch_ = Clock::now() + watch_.interval;
  std::optional<std::string> why = watch_.poll();
  if (why && !stopping_) {
    stopped_by_watch_ = true;
    stop(*why, "");
  }
}

int Supervisor::run() {
  next_watch_ = Clock::now() + watch_.interval;
  while (running_count() > 0) {
    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
    std::vector<std::pair<Rank*, int>> sources{{nullptr, 0}};
    for (Rank& r : ranks_) {
      for (int stream : {0, 1}) {
        if (r.fds[stream] < 0) continue;
        fds.push_back({r.fds[stream], POLLIN, 0});
        sources.emplace_back(&r, stream);
      }
      if (r.heartbeat_fd >= 0) {
        fds.push_back({r.heartbeat_fd, POLLIN, 0});
        sources.emplace_back(&r, kHeartbeatSource);
      }
    }
    int ready = poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready < 0 && errno != EINTR) {
      report(std::string("poll failed: ") + std::strerror(errno) + "; killing the ranks");
      signal_running(SIGKILL);
      killed_ = true;
    }
    for (size_t i = 1; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if (sources[i].second == kHeartbeatSource) {
        read_heartbeat(*sources[i].first);
      } else {
        read_output(*sources[i].first, sources[i].second, false);
      }
    }
    if (ready > 0 && fds[0].revents != 0) {
      while (int sig = signals_.next()) {
        if (sig == SIGCHLD) {
          reap();
        } else {
          on_signal(sig);
        }
      }
    }
    poll_watch();
    kill_hung_ranks();
    if (stopping_ && !killed_ && Clock::now() >= kill_at_ && running_count() > 0) {
      std::string still;
      for (const Rank& r : ranks_) {
        if (r.running) still += (still.empty() ? "" : ", ") + std::to_string(r.rank);
      }
      report("rank(s) " + still + " still running " + seconds(grace_period_) + " after SIGTERM; sending SIGKILL");
      killed_ = true;
      signal_running(SIGKILL);
    }
  }
  if (failure_status_) return exit_code_of(*failure_status_);
  if (stop_signal_ != 0) return 128 + stop_signal_;
  return 0;
}

}  // namespace syncgrad::launch
