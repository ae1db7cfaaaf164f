// CPU kernel of the gradient unscale: one vectorisable loop that scales each element by inv_scale and ORs
// together "is this element inf or NaN" (x - x is 0 for finite x and NaN otherwise); half types compute in
// float and store back in their own type.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "tensor/cpu/elementwise_loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/grad_scale.h"

namespace syncgrad::cpu {
namespace {

template <class T>
bool unscale_block(T* __restrict g, int64_t n, opmath_t<T> inv_scale) {
  using M = opmath_t<T>;
  int nonfinite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const M v = static_cast<M>(g[i]);
    nonfinite |= (v - v) != M(0);
    g[i] = static_cast<T>(v * inv_scale);
  }
  return nonfinite != 0;
}

void unscale_and_check_kernel(const Tensor& grad, const Tensor& found_inf, double inv_scale) {
  visit_floating(grad.dtype(), "unscale_grads_", [&]<class T>() {
    T* g = static_cast<T*>(grad.data_ptr());
    const auto inv = static_cast<opmath_t<T>>(inv_scale);
    // Blocks of 64k elements: large gradients are split across the intra-op threads.
    constexpr int64_t kBlock = int64_t{1} << 16;
    const int64_t blocks = (grad.numel() + kBlock - 1) / kBlock;
    std::vector<uint8_t> found(static_cast<size_t>(blocks), 0);
    parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t first = b * kBlock;
        found[b] = unscale_block<T>(g + first, std::min(kBlock, grad.numel() - first), inv) ? 1 : 0;
      }
    });
    for (uint8_t f : found) {
      if (f != 0) *found_inf.data_ptr<float>() = 1.0f;
    }
  });
}

const KernelRegistrar reg_unscale(kernels::unscale_and_check, DeviceType::kCPU, &unscale_and_check_kernel);

}  // namespace
}  // namespace syncgrad::cpu
