// Two NCCL ranks as threads of one test process, rank r on cuda:r (tests/test_cuda_nccl.cpp,
// tests/test_cuda_ddp.cpp); on a GPU machine that needs two devices, in the emulation two fake ones.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distributed/process_group.h"
#include "distributed/store.h"

namespace syncgrad::testing {

// Runs body(rank) on two threads and returns what each threw ("" for nothing).
inline std::vector<std::string> run_two_ranks(const std::function<void(int rank)>& body) {
  std::vector<std::string> errors(2);
  auto guarded = [&](int rank) {
    try {
      body(rank);
    } catch (const std::exception& e) {
      errors[rank] = e.what();
    }
  };
  std::thread other(guarded, 1);
  guarded(0);
  other.join();
  return errors;
}

// Rank `rank` of a world-size-2 NCCL group on cuda:rank.
inline std::shared_ptr<distributed::ProcessGroup> make_rank(
    const std::shared_ptr<distributed::Store>& store, int rank,
    std::chrono::milliseconds timeout = std::chrono::milliseconds{60'000}) {
  distributed::ProcessGroupOptions options;
  options.device_index = rank;
  options.timeout = timeout;
  return distributed::make_process_group("nccl", store, rank, 2, options);
}

}  // namespace syncgrad::testing
