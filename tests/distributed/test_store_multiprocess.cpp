// Stores across processes (fork): ranks rendezvous through a TCPStore served by the parent, a server killed
// or stopped while a client waits turns into an error instead of a hang, and two processes share a FileStore.
// Children are forked before the parent creates any thread and leave with _exit(status); the parent checks
// every status and kills children that outlive a generous limit. Everything binds 127.0.0.1, ephemeral ports.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distributed/errors.h"
#include "distributed/file_store.h"
#include "distributed/tcp_store.h"
#include "tests/check_error.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using namespace std::chrono_literals;
using syncgrad::testing::check_error;

namespace {

using Clock = std::chrono::steady_clock;

// Exit statuses of children: 0 ok, kCheckFailed when an expectation failed, kThrew on an exception.
constexpr int kCheckFailed = 10;
constexpr int kThrew = 11;
constexpr int kNoPort = 12;

#define CHILD_EXPECT(cond)                                                                             \
  do {                                                                                                 \
    if (!(cond)) {                                                                                     \
      std::fprintf(stderr, "child %d: expectation failed: %s (line %d)\n", getpid(), #cond, __LINE__); \
      return kCheckFailed;                                                                             \
    }                                                                                                  \
  } while (0)

// Forks a child running fn(); its return value (or kThrew) is the exit status.
pid_t spawn(const std::function<int()>& fn) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = kThrew;
    try {
      code = fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child %d: %s\n", getpid(), e.what());
    } catch (...) {
      std::fprintf(stderr, "child %d: unknown exception\n", getpid());
    }
    ::_exit(code);
  }
  return pid;
}

// Waits for a child at most `limit`, killing it after; returns its exit status, 128+signal, or -1 on overrun.
int reap(pid_t pid, std::chrono::milliseconds limit = 20s) {
  const auto deadline = Clock::now() + limit;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0 && errno != EINTR) return -2;
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(5ms);
  }
}

// A pipe the parent uses to tell children the server's port.
struct PortPipe {
  int fds[2] = {-1, -1};
  PortPipe() { REQUIRE(::pipe(fds) == 0); }
  ~PortPipe() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  void send(uint16_t port, int copies) {
    for (int i = 0; i < copies; ++i) REQUIRE(::write(fds[1], &port, sizeof port) == sizeof port);
  }
  // In a child: the port, or 0 when the parent did not send one within the limit.
  uint16_t receive(std::chrono::milliseconds limit = 10s) {
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(limit.count())) != 1) return 0;
    uint16_t port = 0;
    return ::read(fds[0], &port, sizeof port) == sizeof port ? port : 0;
  }
};

std::string temp_dir() {
  std::string pattern = (getenv("TMPDIR") ? std::string(getenv("TMPDIR")) : std::string("/tmp")) + "/sgstore-XXXXXX";
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

TCPStoreOptions options(std::chrono::milliseconds timeout, std::string token = "mp-token") {
  TCPStoreOptions o;
  o.timeout = timeout;
  o.token = std::move(token);
  return o;
}

}  // namespace

TEST_CASE("TCPStore across processes: ranks rendezvous through the parent's server") {
  constexpr int kRanks = 4;
  PortPipe pipe;
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kRanks; ++rank) {
    pids.push_back(spawn([&pipe, rank] {
      const uint16_t port = pipe.receive();
      if (port == 0) return kNoPort;
      TCPStore store("127.0.0.1", port, options(10s));
      store.set("rank/" + std::to_string(rank), "pid " + std::to_string(getpid()));
      store.add("arrived", 1);
      std::vector<std::string> keys;
      for (int r = 0; r < kRanks; ++r) keys.push_back("rank/" + std::to_string(r));
      store.wait(keys);
      for (const auto& k : keys) CHILD_EXPECT(store.get_string(k).rfind("pid ", 0) == 0);
      // All ranks agree on one leader.
      const std::string leader = to_string(store.compare_set("leader", {}, to_bytes(std::to_string(rank))));
      CHILD_EXPECT(!leader.empty());
      store.set("leader_seen/" + std::to_string(rank), leader);
      // Barrier: wait for everybody before leaving.
      CHILD_EXPECT(store.add("done", 1) <= kRanks);
      store.wait({"go"});
      return 0;
    }));
  }
  // Only now does the parent start threads (the server's).
  TCPStoreServer server("127.0.0.1", 0, "mp-token");
  pipe.send(server.port(), kRanks);
  TCPStore parent("127.0.0.1", server.port(), options(10s));
  parent.wait({"leader_seen/0", "leader_seen/1", "leader_seen/2", "leader_seen/3"});
  CHECK(parent.get_string("arrived") == std::to_string(kRanks));
  const std::string leader = parent.get_string("leader");
  for (int r = 0; r < kRanks; ++r) CHECK(parent.get_string("leader_seen/" + std::to_string(r)) == leader);
  parent.set("go", "1");
  for (pid_t pid : pids) CHECK(reap(pid) == 0);
}

TEST_CASE("TCPStore across processes: a killed server turns a waiting get() into a PeerError quickly") {
  PortPipe pipe;
  PortPipe hold;  // the server child lives until it is killed
  const pid_t server_pid = spawn([&] {
    TCPStoreServer server("127.0.0.1", 0, "mp-token");
    pipe.send(server.port(), 1);
    hold.receive(30s);
    return 0;
  });
  const uint16_t port = pipe.receive();
  REQUIRE(port != 0);
  TCPStore client("127.0.0.1", port, options(60s));
  client.set("before", "1");
  std::thread killer([&] {
    std::this_thread::sleep_for(300ms);
    ::kill(server_pid, SIGKILL);
  });
  const auto start = Clock::now();
  check_error<PeerError>([&] { client.get("never_set"); },
                         {"127.0.0.1:" + std::to_string(port), "get('never_set')", "rank 0 / the launcher"});
  const auto elapsed = Clock::now() - start;
  killer.join();
  CHECK(elapsed < 10s);  // far below the 60 s timeout
  CHECK(reap(server_pid) == 128 + SIGKILL);
}

TEST_CASE("TCPStore across processes: a stopped (silent) server is a TimeoutError, not a hang") {
  PortPipe pipe;
  PortPipe hold;
  const pid_t server_pid = spawn([&] {
    TCPStoreServer server("127.0.0.1", 0, "mp-token");
    pipe.send(server.port(), 1);
    hold.receive(30s);
    return 0;
  });
  const uint16_t port = pipe.receive();
  REQUIRE(port != 0);
  TCPStore client("127.0.0.1", port, options(200ms));
  client.set("k", "v");
  REQUIRE(::kill(server_pid, SIGSTOP) == 0);
  const auto start = Clock::now();
  check_error<TimeoutError>([&] { client.get("never_set"); },
                            {"127.0.0.1:" + std::to_string(port), "no reply from the store server"});
  CHECK(Clock::now() - start < 10s);
  ::kill(server_pid, SIGKILL);
  ::kill(server_pid, SIGCONT);
  CHECK(reap(server_pid) == 128 + SIGKILL);
}

TEST_CASE("FileStore across processes: two ranks exchange values, the last one removes the file") {
  const std::string path = temp_dir() + "/filestore";
  const pid_t child = spawn([&] {
    FileStore store(path, 2, 10s);
    store.set("child", "hello from the child");
    CHILD_EXPECT(store.get_string("parent") == "hello from the parent");
    CHILD_EXPECT(store.add("counter", 10) >= 10);
    store.wait({"parent_done"});
    return 0;
  });
  {
    FileStore store(path, 2, 10s);
    store.set("parent", "hello from the parent");
    CHECK(store.get_string("child") == "hello from the child");
    store.add("counter", 1);
    store.wait({"counter"});
    store.set("parent_done", "1");
    CHECK(reap(child) == 0);
    CHECK(store.get_string("counter") == "11");
  }
  struct stat st;
  CHECK(::stat(path.c_str(), &st) != 0);  // both users finished: the file is gone
}
