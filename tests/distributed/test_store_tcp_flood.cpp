// TCPStoreServer under a flood of idle connections, in a forked server process with a low open-file limit:
// connections that never send their HELLO must not block a real 2-rank rendezvous, neither by exhausting the
// server's descriptors nor by filling its per-address bound. The server is forked before any thread exists
// and leaves with _exit(); the parent kills it if it outlives a generous limit. Binds 127.0.0.1 only.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "distributed/errors.h"
#include "distributed/tcp_store.h"
#include "tests/distributed/store_raw_client.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using namespace syncgrad::test::store_raw;
using namespace std::chrono_literals;

namespace {

// A TCPStoreServer in a child process whose open-file limit is `fd_limit`, its stderr kept in a temporary
// file. The child reports its port through a pipe and serves until the parent closes the other pipe (or dies).
class ForkedServer {
 public:
  ForkedServer(rlim_t fd_limit, const std::function<std::unique_ptr<TCPStoreServer>()>& make) {
    log_ = std::tmpfile();
    REQUIRE(log_ != nullptr);
    int port_pipe[2];
    int stop_pipe[2];
    REQUIRE(::pipe(port_pipe) == 0);
    REQUIRE(::pipe(stop_pipe) == 0);
    std::fflush(stdout);
    std::fflush(stderr);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(port_pipe[0]);
      ::close(stop_pipe[1]);
      ::dup2(::fileno(log_), 2);
      int code = 0;
      try {
        rlimit limit{};
        ::getrlimit(RLIMIT_NOFILE, &limit);
        limit.rlim_cur = std::min(fd_limit, limit.rlim_max);
        ::setrlimit(RLIMIT_NOFILE, &limit);
        auto server = make();
        const uint16_t port = server->port();
        if (::write(port_pipe[1], &port, sizeof port) != sizeof port) ::_exit(3);
        char byte;
        while (::read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "server child: %s\n", e.what());
        code = 2;
      }
      ::_exit(code);
    }
    ::close(port_pipe[1]);
    ::close(stop_pipe[0]);
    stop_ = net::Fd(stop_pipe[1]);
    pollfd p{port_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, 20000) == 1 && ::read(port_pipe[0], &port_, sizeof port_) != sizeof port_) port_ = 0;
    ::close(port_pipe[0]);
    REQUIRE(port_ != 0);
  }

  ~ForkedServer() {
    if (pid_ > 0) stop();
    std::fclose(log_);
  }

  // What the server wrote on stderr so far.
  std::string log() const {
    std::string text;
    std::rewind(log_);
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, log_)) > 0) text.append(buf, n);
    return text;
  }

  uint16_t port() const { return port_; }

  // Stops the child; its exit status (0 when it served to the end), -1 when it had to be killed.
  int stop() {
    stop_.reset();
    const auto deadline = Clock::now() + 20s;
    int status = 0;
    for (;;) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) break;
      if (Clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(5ms);
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::FILE* log_ = nullptr;
  net::Fd stop_;
};

TCPStoreOptions client_options(const std::string& token, std::chrono::milliseconds timeout) {
  TCPStoreOptions o;
  o.token = token;
  o.timeout = timeout;
  return o;
}

// Two ranks (threads) meet through the store: each publishes its key, waits for the other's, counts itself.
// Returns the number of ranks that finished; a rank's error is printed.
int rendezvous_two_ranks(uint16_t port, const std::string& token) {
  std::atomic<int> finished{0};
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      try {
        TCPStore store("127.0.0.1", port, client_options(token, 30s));
        store.set("rank/" + std::to_string(rank), "here");
        store.wait({"rank/0", "rank/1"});
        store.add("finished", 1);
        ++finished;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
      }
    });
  }
  for (auto& t : ranks) t.join();
  return finished;
}

// Opens idle connections (no HELLO); every other one sends a single byte of a frame header.
std::deque<net::Fd> open_idle(uint16_t port, int count) {
  std::deque<net::Fd> idle;
  for (int i = 0; i < count; ++i) {
    net::Fd fd = connect_raw(port);
    if (!fd.valid()) continue;
    if (i % 2 == 1) ::send(fd.get(), "\x20", 1, MSG_NOSIGNAL);
    idle.push_back(std::move(fd));
  }
  return idle;
}

}  // namespace

TEST_CASE("TCPStoreServer: idle connections past the open-file limit do not block a 2-rank rendezvous") {
  // 300 idle connections against a server that may hold only 128 descriptors, then a flood that keeps opening
  // new ones while the ranks meet.
  ForkedServer server(128, [] { return std::make_unique<TCPStoreServer>("127.0.0.1", 0, "tok"); });
  std::deque<net::Fd> idle = open_idle(server.port(), 300);
  CHECK(idle.size() == 300);
  std::atomic<bool> stop{false};
  std::thread flood([&] {
    std::deque<net::Fd> held;
    while (!stop) {
      net::Fd fd = connect_raw(server.port());
      if (fd.valid()) held.push_back(std::move(fd));
      if (held.size() > 200) held.pop_front();
    }
  });
  const int finished = rendezvous_two_ranks(server.port(), "tok");
  stop = true;
  flood.join();
  CHECK(finished == 2);
  TCPStore check("127.0.0.1", server.port(), client_options("tok", 30s));
  CHECK(check.get_string("finished") == "2");
  CHECK(server.stop() == 0);
  // Hundreds of evictions, yet one line per kind and interval (the flood lasts well under the 10 s interval).
  const std::string log = server.log();
  const auto lines = std::count(log.begin(), log.end(), '\n');
  MESSAGE("the server's log:\n" << log);
  CHECK(lines >= 1);
  CHECK(lines <= 6);
}
