// CPU row reductions over a contiguous (rows, cols) tensor: variance / standard deviation (two passes in
// double: mean, then squared deviations) and logsumexp (shifted by the row maximum so exp never overflows).
#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/cpu/visit.h"
#include "tensor/ops/reduce.h"

namespace syncgrad::cpu {
namespace {

void var_rows_kernel(const Tensor& out, const Tensor& in, int64_t correction, bool root) {
  const int64_t rows = in.sizes()[0], cols = in.sizes()[1];
  visit_floating(in.dtype(), "var", [&]<class T>() {
    const T* x = static_cast<const T*>(in.data_ptr());
    T* o = static_cast<T*>(out.data_ptr());
    const double divisor = static_cast<double>(std::max<int64_t>(cols - correction, 0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * cols;
      double total = 0;
      for (int64_t c = 0; c < cols; ++c) total += static_cast<double>(row[c]);
      const double mean = total / static_cast<double>(cols);
      double squares = 0;
      for (int64_t c = 0; c < cols; ++c) {
        double d = static_cast<double>(row[c]) - mean;
        squares += d * d;
      }
      double v = squares / divisor;
      o[r] = static_cast<T>(root ? std::sqrt(v) : v);
    }
  });
}

void logsumexp_rows_kernel(const Tensor& out, const Tensor& in) {
  const int64_t rows = in.sizes()[0], cols = in.sizes()[1];
  visit_floating(in.dtype(), "logsumexp", [&]<class T>() {
    using M = opmath_t<T>;
    const T* x = static_cast<const T*>(in.data_ptr());
    T* o = static_cast<T*>(out.data_ptr());
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * cols;
      M top = -std::numeric_limits<M>::infinity();
      for (int64_t c = 0; c < cols; ++c) top = std::max(top, static_cast<M>(row[c]));
      // All -inf (or +inf somewhere): shifting by an infinity would give NaN; shift by 0 instead.
      const M shift = std::isinf(top) ? M(0) : top;
      M total = 0;
      for (int64_t c = 0; c < cols; ++c) total += std::exp(static_cast<M>(row[c]) - shift);
      o[r] = static_cast<T>(std::log(total) + shift);
    }
  });
}

const KernelRegistrar reg_var(kernels::var_rows, DeviceType::kCPU, &var_rows_kernel);
const KernelRegistrar reg_logsumexp(kernels::logsumexp_rows, DeviceType::kCPU, &logsumexp_rows_kernel);

}  // namespace
}  // namespace syncgrad::cpu
