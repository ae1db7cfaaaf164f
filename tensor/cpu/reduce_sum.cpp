// CPU sum kernel: walks the input once; where the innermost run is reduced it sums the run by cascade
// summation (vectorised blocks combined pairwise), otherwise it adds rows into the outputs elementwise. Large
// sums split a dimension they keep over the intra-op threads.
#include "tensor/cpu/loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/views.h"
#include "tensor/threads.h"

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

// Adds `in` into out_view (in's shape, zero strides on the reduced dims) on the calling thread.
template <class Acc, class In>
void sum_strided(const Tensor& out_view, const Tensor& in) {
  for_each_strided<2>(in.sizes(), {static_cast<char*>(out_view.data_ptr()), static_cast<char*>(in.data_ptr())},
                      {&out_view, &in}, [](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
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
}

// The longest dimension the sum keeps (out's size there is in's, above 1) other than the last, or -1. The last
// is left whole: split, each thread would read part of every row (a bias gradient's (rows, columns)), which
// measured slower on two threads than one thread reading whole rows (syncgrad-bench gpt-kernels).
int64_t widest_kept_dim(const Tensor& out, const Tensor& in) {
  int64_t widest = -1;
  for (int64_t d = 0; d + 1 < in.dim(); ++d) {
    if (out.sizes()[d] > 1 && (widest < 0 || in.sizes()[d] > in.sizes()[widest])) widest = d;
  }
  return widest;
}

void sum_into_kernel(const Tensor& out, const Tensor& in) {
  constexpr int64_t kParallelElements = 1 << 17;
  // View `out` with in's shape and zero strides on reduced dims.
  Shape strides = out.strides();
  for (size_t d = 0; d < strides.size(); ++d) {
    if (out.sizes()[d] == 1) strides[d] = 0;
  }
  Tensor out_view = Tensor(std::make_shared<TensorImpl>(out.impl()->storage(), out.dtype(), in.sizes(), strides,
                                                        out.storage_offset()));
  // Large sums of a contiguous input split a kept dimension over the threads: each output element is still summed
  // by one thread in the one-thread order (narrowing a dimension of a contiguous tensor never lets the dimensions
  // around it merge into a longer run), so the result does not depend on the thread count. The dtypes are
  // dispatched outside the parallel region, where an unsupported one may throw.
  visit_numeric(out.dtype(), "sum", [&]<class Acc>() {
    visit_all(in.dtype(), "sum", [&]<class In>() {
      const int64_t split = in.is_contiguous() ? widest_kept_dim(out, in) : -1;
      if (split >= 0 && in.numel() >= kParallelElements && get_num_threads() > 1) {
        parallel_for(in.sizes()[split], 1, [&](int64_t begin, int64_t end) {
          sum_strided<Acc, In>(raw::narrow(out_view, split, begin, end - begin),
                               raw::narrow(in, split, begin, end - begin));
        });
        return;
      }
      sum_strided<Acc, In>(out_view, in);
    });
  });
}

const KernelRegistrar registered(kernels::sum_into, DeviceType::kCPU, &sum_into_kernel);

}  // namespace
}  // namespace syncgrad::cpu
