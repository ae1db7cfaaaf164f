// Intra-op threads on OpenMP (which Eigen's GEMM also uses).
#include "tensor/threads.h"

#include <omp.h>

#include <Eigen/Core>
#include <cstdlib>
#include <string>
#include <thread>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad {
namespace {

int initial_threads() {
  if (const char* local = std::getenv("LOCAL_WORLD_SIZE")) {
    if (std::atoi(local) > 1) return 1;
  }
  if (const char* omp = std::getenv("OMP_NUM_THREADS")) {
    int n = std::atoi(omp);
    if (n >= 1) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int& thread_setting() {
  static int n = [] {
    int v = initial_threads();
    omp_set_num_threads(v);
    Eigen::setNbThreads(v);
    return v;
  }();
  return n;
}

}  // namespace

void set_num_threads(int n) {
  SYNCGRAD_CHECK(n >= 1, ValueError, "set_num_threads: got ", n, "; the thread count must be >= 1");
  thread_setting() = n;
  omp_set_num_threads(n);
  Eigen::setNbThreads(n);
}

int get_num_threads() { return thread_setting(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  int threads = get_num_threads();
  if (grain < 1) grain = 1;
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  if (chunks <= 1 || omp_in_parallel()) {
    body(0, n);
    return;
  }
  int64_t per = (n + chunks - 1) / chunks;
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = c * per;
    int64_t end = std::min(n, begin + per);
    if (begin < end) body(begin, end);
  }
}

}  // namespace syncgrad
