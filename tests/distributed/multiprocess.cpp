// run_job: fork-based multi-process test jobs on 127.0.0.1 with per-rank reports and a hard deadline. The
// ranks are forked only from a single-threaded test process (see wait_until_single_threaded).
#include "tests/distributed/multiprocess.h"

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "distributed/tcp_store.h"
#include "tensor/threads.h"

namespace syncgrad::test {

namespace {
std::FILE* rank_report = nullptr;

// Forked ranks must not inherit a running OpenMP thread pool (libgomp's pool does not survive fork and the
// child's first parallel region would hang), so this test binary computes on one thread from the start.
const bool single_threaded = [] {
  set_num_threads(1);
  return true;
}();

// This process's threads, as "<tid> (<name>)".
std::vector<std::string> threads_of_this_process() {
  std::vector<std::string> threads;
  std::error_code error;  // a thread that exits during the listing is simply left out
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    threads.push_back(entry.path().filename().string() + " (" + name + ")");
  }
  return threads;
}

// fork() copies only the calling thread, and every lock as it was: a mutex that another thread of the test process
// held at that moment stays locked in the child for good. Earlier in-process test cases leave threads that are
// still finishing: a destroyed process group's detached Gloo worker exits a moment after destroy_process_group(),
// and may drop the last reference to a tensor on its way out, under the CPU caching allocator's mutex. A rank
// forked just then hung at its first tensor allocation (about 1 job in 200 under load), so the ranks are forked
// only once this process is down to its main thread. Threads that outlive the wait make run_job fail, naming them.
void wait_until_single_threaded() {
  constexpr auto kPatience = std::chrono::seconds(10);
  const auto give_up = std::chrono::steady_clock::now() + kPatience;
  for (;;) {
    const std::vector<std::string> threads = threads_of_this_process();
    if (threads.size() <= 1) return;
    if (std::chrono::steady_clock::now() > give_up) {
      std::string list;
      for (const std::string& thread : threads) list += (list.empty() ? "" : ", ") + thread;
      throw std::runtime_error("run_job: the test process still runs " + std::to_string(threads.size()) +
                               " threads after " + std::to_string(kPatience.count()) + " s (" + list +
                               "); an earlier test case left them running, and forking now could copy a lock "
                               "one of them holds into the ranks");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

void report(const std::string& line) {
  if (rank_report == nullptr) return;
  std::fprintf(rank_report, "%s\n", line.c_str());
  std::fflush(rank_report);
}

void expect(bool condition, const std::string& message) {
  if (!condition) throw std::runtime_error("expectation failed: " + message);
}

distributed::InitOptions quick_init(std::chrono::milliseconds timeout) {
  distributed::InitOptions options;
  options.group.timeout = timeout;
  options.store_timeout = std::chrono::milliseconds{20'000};
  return options;
}

void expect_all_ok(const std::vector<RankOutcome>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r << " report: " << outcomes[r].report);
    CHECK(outcomes[r].exit_code == 0);
  }
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  close(fd);
  return ntohs(addr.sin_port);
}

std::vector<RankOutcome> run_job(int world_size, const std::function<void(int rank)>& body,
                                 const JobOptions& options) {
  wait_until_single_threaded();
  // The store's server thread, started next, is the one thread that runs while the ranks are forked: it takes
  // no lock of the library's, only malloc's and stdio's, which glibc's fork() hands to the child unlocked.
  const std::string token = "test-token-" + std::to_string(getpid());
  std::unique_ptr<distributed::TCPStoreServer> server;
  int port = 0;
  if (options.parent_serves_store) {
    server = std::make_unique<distributed::TCPStoreServer>("127.0.0.1", 0, token);
    port = server->port();
  } else {
    port = free_port();
  }
  char dir_template[] = "/tmp/syncgrad-job-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> pids(world_size);
  for (int rank = 0; rank < world_size; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world_size).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(world_size).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("SYNCGRAD_STORE_TOKEN", token.c_str(), 1);
      if (options.parent_serves_store) {
        setenv("SYNCGRAD_STORE_SERVED", "1", 1);
      } else {
        unsetenv("SYNCGRAD_STORE_SERVED");
      }
      if (options.extra_env) {
        for (const auto& [name, value] : options.extra_env(rank)) {
          if (value.empty()) {
            unsetenv(name.c_str());
          } else {
            setenv(name.c_str(), value.c_str(), 1);
          }
        }
      }
      rank_report = std::fopen((dir + "/rank" + std::to_string(rank)).c_str(), "w");
      int code = 0;
      try {
        body(rank);
      } catch (const std::exception& e) {
        report(std::string("ERROR ") + e.what());
        code = 1;
      }
      std::fclose(rank_report);
      std::_Exit(code);
    }
    pids[rank] = pid;
  }
  std::vector<RankOutcome> outcomes(world_size);
  std::vector<bool> done(world_size, false);
  int remaining = world_size;
  while (remaining > 0) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (int rank = 0; rank < world_size; ++rank) {
      if (done[rank]) continue;
      int status = 0;
      if (waitpid(pids[rank], &status, WNOHANG) == pids[rank]) {
        done[rank] = true;
        --remaining;
        outcomes[rank].seconds = elapsed;
        outcomes[rank].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      } else if (elapsed > options.deadline_seconds) {
        kill(pids[rank], SIGKILL);
        waitpid(pids[rank], &status, 0);
        done[rank] = true;
        --remaining;
        outcomes[rank].seconds = elapsed;
        outcomes[rank].exit_code = -1;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int rank = 0; rank < world_size; ++rank) {
    const std::string path = dir + "/rank" + std::to_string(rank);
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    outcomes[rank].report = text.str();
    std::remove(path.c_str());
  }
  rmdir(dir.c_str());
  return outcomes;
}

}  // namespace syncgrad::test
