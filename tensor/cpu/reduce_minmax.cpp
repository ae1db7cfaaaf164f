// CPU max/min kernels: values and indices along one dim of a contiguous (outer, size, inner) tensor, and the
// two backward scatters (to the saved indices, or spread over the elements tied with the extremum).
#include <cmath>

#include "tensor/cpu/visit.h"
#include "tensor/ops/reduce.h"

namespace syncgrad::cpu {
namespace {

template <class T> bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<opmath_t<T>>) return std::isnan(static_cast<opmath_t<T>>(v));
  else return false;
}

// True when `v` replaces the current extremum `cur`: strictly better, or the first NaN (NaN propagates).
template <class T> bool replaces(T v, T cur, bool largest) {
  using M = opmath_t<T>;
  M a = static_cast<M>(v), b = static_cast<M>(cur);
  if (is_nan(v)) return !is_nan(cur);
  return largest ? a > b : a < b;
}

template <class T>
void minmax_typed(T* values, int64_t* indices, const T* x, const DimLayout& l, bool largest) {
  for (int64_t o = 0; o < l.outer; ++o) {
    const T* block = x + o * l.size * l.inner;  // (size, inner)
    T* v = values + o * l.inner;
    int64_t* idx = indices + o * l.inner;
    if (l.inner == 1) {
      T best = block[0];
      int64_t best_k = 0;
      for (int64_t k = 1; k < l.size; ++k) {
        if (replaces(block[k], best, largest)) {
          best = block[k];
          best_k = k;
        }
      }
      *v = best;
      *idx = best_k;
      continue;
    }
    for (int64_t i = 0; i < l.inner; ++i) {
      v[i] = block[i];
      idx[i] = 0;
    }
    for (int64_t k = 1; k < l.size; ++k) {
      const T* row = block + k * l.inner;
      for (int64_t i = 0; i < l.inner; ++i) {
        if (replaces(row[i], v[i], largest)) {
          v[i] = row[i];
          idx[i] = k;
        }
      }
    }
  }
}

void minmax_dim_kernel(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim, bool largest) {
  DimLayout l = dim_layout(in.sizes(), dim);
  visit_all(in.dtype(), "max/min", [&]<class T>() {
    minmax_typed<T>(static_cast<T*>(values.data_ptr()), static_cast<int64_t*>(indices.data_ptr()),
                    static_cast<const T*>(in.data_ptr()), l, largest);
  });
}

void index_backward_kernel(const Tensor& grad_in, const Tensor& grad, const Tensor& indices, int64_t dim) {
  DimLayout l = dim_layout(grad_in.sizes(), dim);
  const int64_t* idx = static_cast<const int64_t*>(indices.data_ptr());
  visit_floating(grad_in.dtype(), "max/min backward", [&]<class T>() {
    T* gi = static_cast<T*>(grad_in.data_ptr());
    const T* g = static_cast<const T*>(grad.data_ptr());
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        int64_t j = o * l.inner + i;
        gi[(o * l.size + idx[j]) * l.inner + i] = g[j];
      }
    }
  });
}

void ties_backward_kernel(const Tensor& grad_in, const Tensor& in, const Tensor& value, const Tensor& grad) {
  visit_all(in.dtype(), "max/min backward", [&]<class T>() {
    const T* x = static_cast<const T*>(in.data_ptr());
    const T target = *static_cast<const T*>(value.data_ptr());
    auto tied = [&](T v) {
      return is_nan(target) ? is_nan(v) : static_cast<opmath_t<T>>(v) == static_cast<opmath_t<T>>(target);
    };
    int64_t count = 0;
    for (int64_t i = 0; i < in.numel(); ++i) count += tied(x[i]) ? 1 : 0;
    visit_floating(grad_in.dtype(), "max/min backward", [&]<class G>() {
      using M = opmath_t<G>;
      G share = static_cast<G>(static_cast<M>(*static_cast<const G*>(grad.data_ptr())) / static_cast<M>(count));
      G* gi = static_cast<G*>(grad_in.data_ptr());
      for (int64_t i = 0; i < in.numel(); ++i) {
        if (tied(x[i])) gi[i] = share;
      }
    });
  });
}

const KernelRegistrar reg_minmax(kernels::minmax_dim, DeviceType::kCPU, &minmax_dim_kernel);
const KernelRegistrar reg_index_backward(kernels::index_backward, DeviceType::kCPU, &index_backward_kernel);
const KernelRegistrar reg_ties_backward(kernels::ties_backward, DeviceType::kCPU, &ties_backward_kernel);

}  // namespace
}  // namespace syncgrad::cpu
