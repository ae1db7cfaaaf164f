// Intra-op thread count, a process setting: Eigen's GEMM and the parallel CPU kernels use it. Default: all
// cores, or 1 when the launcher says several ranks share this machine (LOCAL_WORLD_SIZE > 1), as torchrun.
#pragma once

#include <cstdint>
#include <functional>

namespace syncgrad {

void set_num_threads(int n);  // n >= 1; throws ValueError otherwise
int get_num_threads();

// Runs body(begin, end) over [0, n) split into chunks of at least `grain` on the intra-op threads.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace syncgrad
