// CPU embedding kernels: the lookup copies rows (indices checked first, outside the parallel region); the
// backward adds gradient rows into the dense weight gradient, split over embedding columns so that each sum
// has the same order whatever the thread count.
#include <algorithm>
#include <string>

#include "tensor/check.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/embedding.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const int64_t num = weight.sizes()[0], dim = weight.sizes()[1], count = indices.numel();
  visit_index(indices.dtype(), "embedding", [&]<class I>() {
    const I* idx = static_cast<const I*>(indices.data_ptr());
    for (int64_t m = 0; m < count; ++m) {
      SYNCGRAD_CHECK(idx[m] >= 0 && idx[m] < num, IndexError, "embedding: index ", static_cast<int64_t>(idx[m]),
                     " (at position ", m, ") is out of range for num_embeddings ", num, "; indices must be in [0, ",
                     num, ")");
    }
    visit_all(weight.dtype(), "embedding", [&]<class T>() {
      const T* w = static_cast<const T*>(weight.data_ptr());
      T* o = static_cast<T*>(out.data_ptr());
      parallel_for(count, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, dim)), [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) std::copy_n(w + static_cast<int64_t>(idx[m]) * dim, dim, o + m * dim);
      });
    });
  });
}

void embedding_backward_kernel(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& indices,
                               int64_t padding_idx) {
  const int64_t dim = grad_weight.sizes()[1], count = indices.numel();
  visit_index(indices.dtype(), "embedding_backward", [&]<class I>() {
    const I* idx = static_cast<const I*>(indices.data_ptr());
    visit_floating(grad_weight.dtype(), "embedding_backward", [&]<class T>() {
      using M = opmath_t<T>;
      const T* g = static_cast<const T*>(grad_out.data_ptr());
      T* gw = static_cast<T*>(grad_weight.data_ptr());
      parallel_for(dim, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, count)), [&](int64_t d0, int64_t d1) {
        for (int64_t m = 0; m < count; ++m) {
          const int64_t row = static_cast<int64_t>(idx[m]);
          if (row == padding_idx) continue;
          T* dst = gw + row * dim;
          const T* src = g + m * dim;
          for (int64_t d = d0; d < d1; ++d) dst[d] = static_cast<T>(static_cast<M>(dst[d]) + static_cast<M>(src[d]));
        }
      });
    });
  });
}

const KernelRegistrar reg_embedding(kernels::embedding, DeviceType::kCPU, &embedding_kernel);
const KernelRegistrar reg_embedding_backward(kernels::embedding_backward, DeviceType::kCPU, &embedding_backward_kernel);

}  // namespace
}  // namespace syncgrad::cpu
