// CPU binary arithmetic kernels (add, sub, mul, div, pow, maximum, minimum, add with alpha) over strided,
// broadcast operands; half types compute in float.
#include <cmath>
#include <type_traits>

#include "tensor/cpu/elementwise_loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/int_pow.h"
#include "tensor/ops/elementwise.h"

namespace syncgrad::cpu {
namespace {

template <class M>
bool is_nan(M v) {
  if constexpr (std::is_floating_point_v<M>) return std::isnan(v);
  else return false;
}

template <class T, class F>
void arith(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  using M = opmath_t<T>;
  // convert(): bfloat16 conversions that vectorise (Eigen's stay scalar), bit-identical to Eigen's.
  map2<T, T, T>(out, a, b, [f](T x, T y) { return convert<T>(f(convert<M>(x), convert<M>(y))); });
}

template <class T>
void binary_typed(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using M = opmath_t<T>;
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case BinaryOp::add:
      case BinaryOp::maximum: map2<T, T, T>(out, a, b, [](bool x, bool y) { return x || y; }); return;
      case BinaryOp::mul:
      case BinaryOp::minimum: map2<T, T, T>(out, a, b, [](bool x, bool y) { return x && y; }); return;
      default: unsupported_dtype(binary_op_name(op), DType::boolean, "all numeric dtypes (not bool)");
    }
  } else {
    switch (op) {
      case BinaryOp::add: arith<T>(out, a, b, [](M x, M y) { return x + y; }); return;
      case BinaryOp::sub: arith<T>(out, a, b, [](M x, M y) { return x - y; }); return;
      case BinaryOp::mul: arith<T>(out, a, b, [](M x, M y) { return x * y; }); return;
      case BinaryOp::div: arith<T>(out, a, b, [](M x, M y) { return x / y; }); return;
      case BinaryOp::pow:
        if constexpr (std::is_floating_point_v<M>) {
          arith<T>(out, a, b, [](M x, M y) { return std::pow(x, y); });
        } else {
          arith<T>(out, a, b, [](M x, M y) { return int_pow<M>(x, y); });
        }
        return;
      // NaN propagates from either side.
      case BinaryOp::maximum:
        arith<T>(out, a, b, [](M x, M y) { return (is_nan(x) || x > y) ? x : y; });
        return;
      case BinaryOp::minimum:
        arith<T>(out, a, b, [](M x, M y) { return (is_nan(x) || x < y) ? x : y; });
        return;
    }
  }
}

void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_all(out.dtype(), binary_op_name(op), [&]<class T>() { binary_typed<T>(op, out, a, b); });
}

void add_scaled_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  visit_numeric(out.dtype(), "add", [&]<class T>() {
    using M = opmath_t<T>;
    const M s = std::is_integral_v<M> ? static_cast<M>(alpha.to_int()) : static_cast<M>(alpha.to_double());
    arith<T>(out, a, b, [s](M x, M y) { return x + s * y; });
  });
}

const KernelRegistrar reg_binary(kernels::binary, DeviceType::kCPU, &binary_kernel);
const KernelRegistrar reg_add_scaled(kernels::add_scaled, DeviceType::kCPU, &add_scaled_kernel);

}  // namespace
}  // namespace syncgrad::cpu
