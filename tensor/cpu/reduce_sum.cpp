// CPU sum kernel: walks the input once; where the innermost run is reduced it sums the run by cascade
// summation (vectorised blocks combined pairwise), otherwise it adds rows into the outputs elementwise (split
// over columns on several threads when a large sum reduces leading dimensions).
#include <algorithm>

#include "tensor/cpu/loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/views.h"

namespace syncgrad::cpu {
namespace {

// Sums n elements `stride` bytes apart. Blocks of up to kBlock elements are summed with kLanes independent
// accumulators (vectorisable); longer runs are split in halves and summed pairwise (cascade summation), so the
// rounding error grows with log(n) rather than n.
template <class Acc, class In>
Acc sum_run(const char* p, int64_t stride, int64_t n) {
  constexpr int64_t kLanes = 16;
  constexpr int64_t kBlock = 2048;
  if (n > kBlock) {
    int64_t half = n / 2 / kLanes * kLanes;
    return sum_run<Acc, In>(p, stride, half) + sum_run<Acc, In>(p + half * stride, stride, n - half);
  }
  Acc lanes[kLanes] = {};
  int64_t i = 0;
  if (stride == sizeof(In)) {
    const In* x = reinterpret_cast<const In*>(p);
    for (; i + kLanes <= n; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] += convert<Acc>(x[i + l]);
    }
    for (; i < n; ++i) lanes[0] += convert<Acc>(x[i]);
  } else {
    for (; i < n; ++i) lanes[i % kLanes] += convert<Acc>(*reinterpret_cast<const In*>(p + i * stride));
  }
  for (int64_t width = kLanes / 2; width > 0; width /= 2) {
    for (int64_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

// The columns of a sum over leading dimensions: `in` contiguous (rows, cols) once its leading dims are merged,
// `out` contiguous over the trailing ones, every reduced dim before every kept one (a linear layer's bias
// gradient). 0 when the sum has another layout.
int64_t leading_reduction_columns(const Tensor& out, const Tensor& in) {
  if (!in.is_contiguous() || !out.is_contiguous() || out.dim() != in.dim()) return 0;
  int64_t cols = 1;
  bool kept_seen = false;
  for (int64_t d = 0; d < in.dim(); ++d) {
    const bool reduced = out.sizes()[d] == 1 && in.sizes()[d] != 1;
    if (reduced && kept_seen) return 0;
    if (!reduced) {
      kept_seen = kept_seen || in.sizes()[d] != 1;
      cols *= in.sizes()[d];
    }
  }
  return cols;
}

// Adds each row of `in` (rows, cols) into `out` (cols), the columns split over the intra-op threads; every
// column is summed in row order, as the one-thread loop does, so the result does not depend on the threads.
template <class Acc, class In>
void sum_rows_by_columns(Acc* __restrict out, const In* __restrict in, int64_t rows, int64_t cols) {
  constexpr int64_t kColumnBlock = 16;
  const int64_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    const int64_t c0 = b0 * kColumnBlock, c1 = std::min(cols, b1 * kColumnBlock);
    for (int64_t r = 0; r < rows; ++r) {
      const In* x = in + r * cols;
      for (int64_t c = c0; c < c1; ++c) out[c] += convert<Acc>(x[c]);
    }
  });
}

void sum_into_kernel(const Tensor& out, const Tensor& in) {
  constexpr int64_t kParallelElements = 1 << 17;
  const int64_t cols = leading_reduction_columns(out, in);
  if (cols >= 32 && in.numel() >= kParallelElements && get_num_threads() > 1) {
    visit_numeric(out.dtype(), "sum", [&]<class Acc>() {
      visit_all(in.dtype(), "sum", [&]<class In>() {
        sum_rows_by_columns(static_cast<Acc*>(out.data_ptr()), static_cast<const In*>(in.data_ptr()),
                            in.numel() / cols, cols);
      });
    });
    return;
  }
  // View `out` with in's shape and zero strides on reduced dims.
  Shape strides = out.strides();
  for (size_t d = 0; d < strides.size(); ++d) {
    if (out.sizes()[d] == 1) strides[d] = 0;
  }
  Tensor out_view = Tensor(std::make_shared<TensorImpl>(out.impl()->storage(), out.dtype(), in.sizes(), strides,
                                                        out.storage_offset()));
  visit_numeric(out.dtype(), "sum", [&]<class Acc>() {
    visit_all(in.dtype(), "sum", [&]<class In>() {
      for_each_strided<2>(in.sizes(), {static_cast<char*>(out_view.data_ptr()), static_cast<char*>(in.data_ptr())},
                          {&out_view, &in},
                          [](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
                            Acc* o = reinterpret_cast<Acc*>(p[0]);
                            if (s[0] == 0) {
                              *o += sum_run<Acc, In>(p[1], s[1], n);
                            } else if (s[0] == sizeof(Acc) && s[1] == sizeof(In)) {
                              const In* x = reinterpret_cast<const In*>(p[1]);
                              for (int64_t i = 0; i < n; ++i) o[i] += convert<Acc>(x[i]);
                            } else {
                              for (int64_t i = 0; i < n; ++i) {
                                *reinterpret_cast<Acc*>(p[0] + i * s[0]) +=
                                    convert<Acc>(*reinterpret_cast<const In*>(p[1] + i * s[1]));
                              }
                            }
                          });
    });
  });
}

const KernelRegistrar registered(kernels::sum_into, DeviceType::kCPU, &sum_into_kernel);

}  // namespace
}  // namespace syncgrad::cpu
