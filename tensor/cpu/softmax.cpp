// CPU softmax / log_softmax forward and backward along one dim of contiguous tensors seen as (outer, size,
// inner). Rows along the last dim (inner == 1) use Eigen's vectorised exp; half types compute in float.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tensor/cpu/visit.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/softmax.h"

namespace syncgrad::cpu {
namespace {

template <class M> using Row = Eigen::Map<Eigen::Array<M, Eigen::Dynamic, 1>>;

// Row i of a (rows, n) block as a float/double array: the data itself, or a converted copy in `scratch`.
template <class T, class M = opmath_t<T>>
M* load_row(const T* src, int64_t n, std::vector<M>& scratch) {
  if constexpr (std::is_same_v<T, M>) {
    return const_cast<M*>(src);
  } else {
    for (int64_t i = 0; i < n; ++i) scratch[i] = static_cast<M>(src[i]);
    return scratch.data();
  }
}

template <class T, class M = opmath_t<T>>
void store_row(T* dst, const M* values, int64_t n) {
  if constexpr (!std::is_same_v<T, M>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(values[i]);
  }
}

// Softmax of contiguous rows of length n (the dim is the last one).
template <class T>
void softmax_rows(T* out, const T* in, int64_t rows, int64_t n, bool log) {
  using M = opmath_t<T>;
  std::vector<M> in_buf(std::is_same_v<T, M> ? 0 : n), out_buf(std::is_same_v<T, M> ? 0 : n);
  for (int64_t r = 0; r < rows; ++r) {
    Row<M> x(load_row<T>(in + r * n, n, in_buf), n);
    Row<M> y(std::is_same_v<T, M> ? reinterpret_cast<M*>(out + r * n) : out_buf.data(), n);
    const M top = x.maxCoeff();
    y = (x - top).exp();
    const M total = y.sum();
    if (log) y = x - (top + std::log(total));
    else y *= M(1) / total;
    store_row<T>(out + r * n, y.data(), n);
  }
}

template <class T>
void softmax_rows_backward(T* grad_in, const T* grad_out, const T* out, int64_t rows, int64_t n, bool log) {
  using M = opmath_t<T>;
  const bool converted = !std::is_same_v<T, M>;
  std::vector<M> g_buf(converted ? n : 0), y_buf(converted ? n : 0), gi_buf(converted ? n : 0);
  for (int64_t r = 0; r < rows; ++r) {
    Row<M> g(load_row<T>(grad_out + r * n, n, g_buf), n);
    Row<M> y(load_row<T>(out + r * n, n, y_buf), n);
    Row<M> gi(converted ? gi_buf.data() : reinterpret_cast<M*>(grad_in + r * n), n);
    if (log) gi = g - y.exp() * g.sum();
    else gi = y * (g - (g * y).sum());
    store_row<T>(grad_in + r * n, gi.data(), n);
  }
}

// Softmax along the middle dim of (outer, size, inner) blocks with inner > 1: lanes run across `inner`.
template <class T>
void softmax_strided(T* out, const T* in, const DimLayout& l, bool log) {
  using M = opmath_t<T>;
  std::vector<M> top(l.inner), total(l.inner);
  for (int64_t o = 0; o < l.outer; ++o) {
    const T* x = in + o * l.size * l.inner;
    T* y = out + o * l.size * l.inner;
    std::fill(top.begin(), top.end(), -std::numeric_limits<M>::infinity());
    std::fill(total.begin(), total.end(), M(0));
    for (int64_t k = 0; k < l.size; ++k) {
      for (int64_t i = 0; i < l.inner; ++i) top[i] = std::max(top[i], static_cast<M>(x[k * l.inner + i]));
    }
    for (int64_t k = 0; k < l.size; ++k) {
      for (int64_t i = 0; i < l.inner; ++i) total[i] += std::exp(static_cast<M>(x[k * l.inner + i]) - top[i]);
    }
    for (int64_t k = 0; k < l.size; ++k) {
      for (int64_t i = 0; i < l.inner; ++i) {
        M v = static_cast<M>(x[k * l.inner + i]) - top[i];
        y[k * l.inner + i] = static_cast<T>(log ? v - std::log(total[i]) : std::exp(v) / total[i]);
      }
    }
  }
}

template <class T>
void softmax_strided_backward(T* grad_in, const T* grad_out, const T* out, const DimLayout& l, bool log) {
  using M = opmath_t<T>;
  std::vector<M> dot(l.inner);
  for (int64_t o = 0; o < l.outer; ++o) {
    const int64_t base = o * l.size * l.inner;
    std::fill(dot.begin(), dot.end(), M(0));
    for (int64_t k = 0; k < l.size; ++k) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const int64_t j = base + k * l.inner + i;
        dot[i] += log ? static_cast<M>(grad_out[j]) : static_cast<M>(grad_out[j]) * static_cast<M>(out[j]);
      }
    }
    for (int64_t k = 0; k < l.size; ++k) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const int64_t j = base + k * l.inner + i;
        const M g = static_cast<M>(grad_out[j]), y = static_cast<M>(out[j]);
        grad_in[j] = static_cast<T>(log ? g - std::exp(y) * dot[i] : y * (g - dot[i]));
      }
    }
  }
}

void softmax_kernel(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  DimLayout l = dim_layout(in.sizes(), dim);
  visit_floating(in.dtype(), "softmax", [&]<class T>() {
    T* y = static_cast<T*>(out.data_ptr());
    const T* x = static_cast<const T*>(in.data_ptr());
    if (l.inner == 1) softmax_rows<T>(y, x, l.outer, l.size, log);
    else softmax_strided<T>(y, x, l, log);
  });
}

void softmax_backward_kernel(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int64_t dim,
                             bool log) {
  DimLayout l = dim_layout(out.sizes(), dim);
  visit_floating(out.dtype(), "softmax backward", [&]<class T>() {
    T* gi = static_cast<T*>(grad_in.data_ptr());
    const T* g = static_cast<const T*>(grad_out.data_ptr());
    const T* y = static_cast<const T*>(out.data_ptr());
    if (l.inner == 1) softmax_rows_backward<T>(gi, g, y, l.outer, l.size, log);
    else softmax_strided_backward<T>(gi, g, y, l, log);
  });
}

const KernelRegistrar reg_softmax(kernels::softmax, DeviceType::kCPU, &softmax_kernel);
const KernelRegistrar reg_softmax_backward(kernels::softmax_backward, DeviceType::kCPU, &softmax_backward_kernel);

}  // namespace
}  // namespace syncgrad::cpu
