// CUDA softmax / log_softmax forward and backward along one dim of contiguous (outer, size, inner) tensors:
// a block of threads per row when the dim is the last one (inner == 1), otherwise a thread per (outer, inner)
// line walking the dim; half types compute in float (tensor/cpu/softmax.cpp's formulas).
#include <cstdint>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/parallel.cuh"
#include "tensor/cuda/reduce_kernels.h"

namespace syncgrad::cuda {
namespace {

template <class M>
__host__ __device__ __forceinline__ M larger(M a, M b) {
  return a < b ? b : a;
}

template <class T>
void softmax_typed(T* out, const T* in, int64_t outer, int64_t size, int64_t inner, bool log, cudaStream_t stream) {
  using M = opmath_t<T>;
  const M lowest = -infinity<M>();
  if (inner == 1) {
    for_each_row(outer, size, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t r) {
      const T* x = in + r * size;
      T* y = out + r * size;
      auto at = [&](int64_t k) { return static_cast<M>(op_value(x[k])); };
      const M top = team.reduce(size, lowest, at, [](M a, M b) { return larger(a, b); });
      const M total = team.reduce(
          size, M(0), [&](int64_t k) { return dmath::exp(at(k) - top); }, [](M a, M b) { return a + b; });
      if (log) {
        const M shift = top + dmath::log(total);
        team.for_each(size, [&](int64_t k) { y[k] = convert<T>(at(k) - shift); });
      } else {
        const M scale = M(1) / total;
        team.for_each(size, [&](int64_t k) { y[k] = convert<T>(dmath::exp(at(k) - top) * scale); });
      }
    });
    return;
  }
  for_each_index(outer * inner, stream, [=] SG_LAMBDA(int64_t j) {
    const int64_t o = j / inner, i = j % inner;
    const T* x = in + o * size * inner + i;
    T* y = out + o * size * inner + i;
    M top = lowest;
    for (int64_t k = 0; k < size; ++k) top = larger(top, static_cast<M>(op_value(x[k * inner])));
    M total = 0;
    for (int64_t k = 0; k < size; ++k) total += dmath::exp(static_cast<M>(op_value(x[k * inner])) - top);
    const M log_total = dmath::log(total);
    for (int64_t k = 0; k < size; ++k) {
      const M v = static_cast<M>(op_value(x[k * inner])) - top;
      y[k * inner] = convert<T>(log ? v - log_total : dmath::exp(v) / total);
    }
  });
}

template <class T>
void softmax_backward_typed(T* grad_in, const T* grad_out, const T* out, int64_t outer, int64_t size, int64_t inner,
                            bool log, cudaStream_t stream) {
  using M = opmath_t<T>;
  if (inner == 1) {
    for_each_row(outer, size, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t r) {
      const T* g = grad_out + r * size;
      const T* y = out + r * size;
      T* gi = grad_in + r * size;
      auto g_at = [&](int64_t k) { return static_cast<M>(op_value(g[k])); };
      auto y_at = [&](int64_t k) { return static_cast<M>(op_value(y[k])); };
      auto plus = [](M a, M b) { return a + b; };
      if (log) {
        const M total = team.reduce(size, M(0), g_at, plus);
        team.for_each(size, [&](int64_t k) { gi[k] = convert<T>(g_at(k) - dmath::exp(y_at(k)) * total); });
      } else {
        const M dot = team.reduce(
            size, M(0), [&](int64_t k) { return g_at(k) * y_at(k); }, plus);
        team.for_each(size, [&](int64_t k) { gi[k] = convert<T>(y_at(k) * (g_at(k) - dot)); });
      }
    });
    return;
  }
  for_each_index(outer * inner, stream, [=] SG_LAMBDA(int64_t j) {
    const int64_t o = j / inner, i = j % inner;
    const int64_t base = o * size * inner + i;
    M dot = 0;
    for (int64_t k = 0; k < size; ++k) {
      const M g = static_cast<M>(op_value(grad_out[base + k * inner]));
      dot += log ? g : g * static_cast<M>(op_value(out[base + k * inner]));
    }
    for (int64_t k = 0; k < size; ++k) {
      const M g = static_cast<M>(op_value(grad_out[base + k * inner]));
      const M y = static_cast<M>(op_value(out[base + k * inner]));
      grad_in[base + k * inner] = convert<T>(log ? g - dmath::exp(y) * dot : y * (g - dot));
    }
  });
}

}  // namespace

void launch_softmax(DType dtype, void* out, const void* in, int64_t outer, int64_t size, int64_t inner, bool log,
                    cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    softmax_typed<T>(static_cast<T*>(out), static_cast<const T*>(in), outer, size, inner, log, stream);
  });
}

void launch_softmax_backward(DType dtype, void* grad_in, const void* grad_out, const void* out, int64_t outer,
                             int64_t size, int64_t inner, bool log, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    softmax_backward_typed<T>(static_cast<T*>(grad_in), static_cast<const T*>(grad_out), static_cast<const T*>(out),
                              outer, size, inner, log, stream);
  });
}

}  // namespace syncgrad::cuda
