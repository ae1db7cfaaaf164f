// fork() while another thread allocates and frees tensors: every child can allocate. fork() copies each lock as
// it is at that moment, so without the library's pthread_atfork handlers (tensor/allocator.cpp) a child forked
// while the other thread held the allocator's or the memory tags' mutex blocked forever at its first allocation.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tensor/memory_tag.h"
#include "tensor/ops/factories.h"

using namespace syncgrad;

TEST_CASE("a child forked while another thread allocates and frees tensors can allocate") {
  constexpr int kForks = 50;
  constexpr int kTag = 204;  // tagged allocations take the memory tags' mutex inside the allocator's
  constexpr auto kPatience = std::chrono::seconds(5);

  std::atomic<bool> stop{false};
  std::atomic<long> rounds{0};
  std::thread churn([&] {
    MemoryTagGuard tag(kTag);
    while (!stop.load()) {
      Tensor t = zeros({1024});  // 4 KiB, freed at the end of each round
      memory_tag_stats(kTag);    // the memory tags' mutex alone
      rounds.fetch_add(1);
    }
  });
  while (rounds.load() == 0) std::this_thread::yield();

  std::vector<pid_t> children;
  for (int i = 0; i < kForks; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      try {
        MemoryTagGuard tag(kTag);
        Tensor t = zeros({1024});
        _exit(0);
      } catch (...) {
        _exit(1);
      }
    }
    REQUIRE(pid > 0);
    children.push_back(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(4));  // forks spread over ~200 ms of churn
  }
  stop.store(true);
  churn.join();

  int hung = 0;
  int failed = 0;
  const auto give_up = std::chrono::steady_clock::now() + kPatience;
  for (const pid_t pid : children) {
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (done == 0) {
      ++hung;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    } else if (done != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
    }
  }
  if (hung > 0) {
    FAIL(hung << " of " << kForks << " children forked while another thread allocated and freed tensors did not exit "
         << "within " << kPatience.count() << " s (killed): blocked at their first allocation on a library mutex "
         << "that fork() copied locked");
  }
  CHECK_MESSAGE(failed == 0, failed << " of " << kForks << " children failed to allocate a tensor");
}
