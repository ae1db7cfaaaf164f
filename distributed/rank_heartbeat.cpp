// The rank side of the launcher's hang detection: a progress counter and a thread that turns progress into one
// byte a second on SYNCGRAD_HEARTBEAT_FD (see rank_heartbeat.h).
#include "distributed/rank_heartbeat.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace syncgrad::distributed::heartbeat {
namespace {

constexpr auto kBeatInterval = std::chrono::seconds(1);

std::atomic<uint64_t> progress{0};
std::atomic<uint64_t> reported{0};  // the progress count the launcher last heard of (as a beat or as idle)
std::atomic<int> pipe_fd{-1};       // set once the thread runs
std::once_flag started;

// The descriptor the launcher gave, or -1 when none (or a malformed value: then this rank is not watched).
int launcher_fd() {
  const char* text = std::getenv("SYNCGRAD_HEARTBEAT_FD");
  if (text == nullptr) return -1;
  int fd = -1;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, fd);
  if (ec != std::errc() || ptr != end || fd < 3) return -1;
  return fd;
}

// False once the launcher no longer reads (the pipe is closed: it is gone).
bool send(int fd, char byte) {
  ssize_t n;
  do {
    n = ::write(fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  return n == 1 || (n < 0 && errno == EAGAIN);
}

void beat(int fd) {
  for (;;) {
    std::this_thread::sleep_for(kBeatInterval);
    const uint64_t now = progress.load();
    if (reported.exchange(now) != now && !send(fd, 'b')) return;
  }
}

// At a normal exit the rank says it is idle: a wrapper script that goes on after it is not taken for a hang.
struct IdleAtExit {
  ~IdleAtExit() { note_idle(); }
};

}  // namespace

void note_progress() {
  progress.fetch_add(1);
  std::call_once(started, [] {
    const int fd = launcher_fd();
    if (fd < 0) return;
    static IdleAtExit idle_at_exit;
    pipe_fd.store(fd);
    std::thread(beat, fd).detach();
  });
}

void note_idle() {
  const int fd = pipe_fd.load();
  if (fd < 0) return;
  reported.store(progress.load());
  send(fd, 'i');
}

}  // namespace syncgrad::distributed::heartbeat
