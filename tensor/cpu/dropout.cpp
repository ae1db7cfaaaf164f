// CPU dropout kernel: element i keeps its value when the uniform draw of Philox(seed, first + i) is >= p, so
// the mask is identical for any thread count (and to the CUDA kernel filling the same slot).
#include <algorithm>

#include "tensor/cpu/visit.h"
#include "tensor/ops/dropout.h"
#include "tensor/philox.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

void dropout_kernel(const Tensor& out, const Tensor& mask, const Tensor& input, double p, uint64_t seed,
                    uint64_t first) {
  visit_floating(input.dtype(), "dropout", [&]<class T>() {
    using M = opmath_t<T>;
    const T* x = static_cast<const T*>(input.data_ptr());
    T* y = static_cast<T*>(out.data_ptr());
    T* m = static_cast<T*>(mask.data_ptr());
    const M scale = static_cast<M>(p < 1.0 ? 1.0 / (1.0 - p) : 0.0);
    const T scale_t = static_cast<T>(scale);
    parallel_for(input.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
      // Draw a block of keep flags first (a branch-free loop the compiler vectorises), then apply them.
      constexpr int64_t kBlock = 256;
      bool keep[kBlock];
      for (int64_t start = begin; start < end; start += kBlock) {
        const int64_t count = std::min(kBlock, end - start);
        for (int64_t j = 0; j < count; ++j) {
          philox::Block b = philox::draw(seed, first + static_cast<uint64_t>(start + j));
          keep[j] = philox::uniform_double(b.w[0], b.w[1]) >= p;
        }
        for (int64_t j = 0; j < count; ++j) {
          const int64_t i = start + j;
          m[i] = keep[j] ? scale_t : T(0);
          y[i] = keep[j] ? static_cast<T>(static_cast<M>(x[i]) * scale) : T(0);
        }
      }
    });
  });
}

const KernelRegistrar registered(kernels::dropout, DeviceType::kCPU, &dropout_kernel);

}  // namespace
}  // namespace syncgrad::cpu
