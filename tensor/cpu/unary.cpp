// CPU unary kernels (neg, abs, relu, ..., gelu), their gradient kernels, and clamp with scalar bounds.
// Half types compute in float (bfloat16 results are rounded with half_convert.h's vectorisable conversion).
#include <cmath>
#include <limits>
#include <type_traits>

#include "tensor/cpu/elementwise_loops.h"
#include "tensor/cpu/gelu_tanh.h"
#include "tensor/cpu/half_convert.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/unary.h"

namespace syncgrad::cpu {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;   // sqrt(2 / pi), the tanh-gelu scale
constexpr double kGeluCubic = 0.044715;               // the tanh-gelu cubic coefficient
constexpr double kInvSqrt2Pi = 0.3989422804014327;    // 1 / sqrt(2 pi), the normal density at 0

template <class T, class F>
void apply(const Tensor& out, const Tensor& in, F f) {
  using M = opmath_t<T>;
  if constexpr (std::is_same_v<T, bfloat16>) map1<T, T>(out, in, [f](T x) { return to_bf16(f(to_float(x))); });
  else map1<T, T>(out, in, [f](T x) { return static_cast<T>(f(static_cast<M>(x))); });
}

template <class T>
void numeric_unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  using M = opmath_t<T>;
  switch (op) {
    case UnaryOp::neg: apply<T>(out, in, [](M x) { return static_cast<M>(-x); }); return;
    case UnaryOp::abs:
      if constexpr (std::is_unsigned_v<M>) apply<T>(out, in, [](M x) { return x; });
      else apply<T>(out, in, [](M x) { return x < M(0) ? static_cast<M>(-x) : x; });
      return;
    // x < 0 rather than x > 0 keeps NaN.
    case UnaryOp::relu:
      if constexpr (std::is_same_v<T, bfloat16>) {  // on the bits, which vectorises: (0x8000, 0xff80] is x < 0
        map1<T, T>(out, in, [](T x) {
          const auto bits = Eigen::numext::bit_cast<uint16_t>(x);
          return bits > 0x8000u && bits <= 0xff80u ? T(0) : x;
        });
      } else {
        apply<T>(out, in, [](M x) { return x < M(0) ? M(0) : x; });
      }
      return;
    case UnaryOp::square: apply<T>(out, in, [](M x) { return static_cast<M>(x * x); }); return;
    case UnaryOp::sign:
      apply<T>(out, in, [](M x) { return static_cast<M>((M(0) < x) - (x < M(0))); });
      return;
    default: break;
  }
  if constexpr (std::is_floating_point_v<M>) {
    switch (op) {
      case UnaryOp::exp: apply<T>(out, in, [](M x) { return std::exp(x); }); return;
      case UnaryOp::log: apply<T>(out, in, [](M x) { return std::log(x); }); return;
      case UnaryOp::log1p: apply<T>(out, in, [](M x) { return std::log1p(x); }); return;
      case UnaryOp::sqrt: apply<T>(out, in, [](M x) { return std::sqrt(x); }); return;
      case UnaryOp::rsqrt: apply<T>(out, in, [](M x) { return M(1) / std::sqrt(x); }); return;
      case UnaryOp::sigmoid: apply<T>(out, in, [](M x) { return M(1) / (M(1) + std::exp(-x)); }); return;
      case UnaryOp::tanh: apply<T>(out, in, [](M x) { return std::tanh(x); }); return;
      case UnaryOp::gelu:
        apply<T>(out, in, [](M x) { return M(0.5) * x * (M(1) + std::erf(x * M(M_SQRT1_2))); });
        return;
      case UnaryOp::gelu_tanh:
        if (gelu_tanh_contiguous(out, in)) return;  // float32 / bfloat16 fast path
        apply<T>(out, in, [](M x) {
          return M(0.5) * x * (M(1) + std::tanh(M(kSqrt2OverPi) * (x + M(kGeluCubic) * x * x * x)));
        });
        return;
      default: break;
    }
  }
  unsupported_dtype(unary_op_name(op), out.dtype(), "float32, float64, float16, bfloat16");
}

void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in) {
  visit_numeric(out.dtype(), unary_op_name(op), [&]<class T>() { numeric_unary<T>(op, out, in); });
}

template <class T, class F>
void apply_grad(const Tensor& grad_in, const Tensor& grad_out, const Tensor& saved, F f) {
  using M = opmath_t<T>;
  if constexpr (std::is_same_v<T, bfloat16>) {
    map2<T, T, T>(grad_in, grad_out, saved, [f](T g, T s) { return to_bf16(f(to_float(g), to_float(s))); });
  } else {
    map2<T, T, T>(grad_in, grad_out, saved,
                  [f](T g, T s) { return static_cast<T>(f(static_cast<M>(g), static_cast<M>(s))); });
  }
}

template <class T>
void unary_backward_typed(UnaryOp op, const Tensor& gi, const Tensor& go, const Tensor& s) {
  using M = opmath_t<T>;
  switch (op) {
    case UnaryOp::neg: apply_grad<T>(gi, go, s, [](M g, M) { return -g; }); return;
    case UnaryOp::sign: apply_grad<T>(gi, go, s, [](M, M) { return M(0); }); return;
    // abs'(0) = 0 and relu'(0) = 0, as PyTorch.
    case UnaryOp::abs: apply_grad<T>(gi, go, s, [](M g, M x) { return g * M((M(0) < x) - (x < M(0))); }); return;
    case UnaryOp::relu:
      if constexpr (std::is_same_v<T, bfloat16>) {  // on the bits: [0x0001, 0x7f80] is y > 0
        map2<T, T, T>(gi, go, s, [](T g, T y) {
          const auto bits = Eigen::numext::bit_cast<uint16_t>(y);
          return bits >= 0x0001u && bits <= 0x7f80u ? g : T(0);
        });
      } else {
        apply_grad<T>(gi, go, s, [](M g, M y) { return y > M(0) ? g : M(0); });
      }
      return;
    case UnaryOp::square: apply_grad<T>(gi, go, s, [](M g, M x) { return M(2) * g * x; }); return;
    case UnaryOp::exp: apply_grad<T>(gi, go, s, [](M g, M y) { return g * y; }); return;
    case UnaryOp::log: apply_grad<T>(gi, go, s, [](M g, M x) { return g / x; }); return;
    case UnaryOp::log1p: apply_grad<T>(gi, go, s, [](M g, M x) { return g / (M(1) + x); }); return;
    case UnaryOp::sqrt: apply_grad<T>(gi, go, s, [](M g, M y) { return g / (M(2) * y); }); return;
    case UnaryOp::rsqrt: apply_grad<T>(gi, go, s, [](M g, M y) { return M(-0.5) * g * y * y * y; }); return;
    case UnaryOp::sigmoid: apply_grad<T>(gi, go, s, [](M g, M y) { return g * y * (M(1) - y); }); return;
    case UnaryOp::tanh: apply_grad<T>(gi, go, s, [](M g, M y) { return g * (M(1) - y * y); }); return;
    case UnaryOp::gelu:
      // d/dx x Phi(x) = Phi(x) + x phi(x)
      apply_grad<T>(gi, go, s, [](M g, M x) {
        M cdf = M(0.5) * (M(1) + std::erf(x * M(M_SQRT1_2)));
        M pdf = M(kInvSqrt2Pi) * std::exp(M(-0.5) * x * x);
        return g * (cdf + x * pdf);
      });
      return;
    case UnaryOp::gelu_tanh:
      if (gelu_tanh_backward_contiguous(gi, go, s)) return;  // float32 / bfloat16 fast path
      apply_grad<T>(gi, go, s, [](M g, M x) {
        M inner = M(kSqrt2OverPi) * (x + M(kGeluCubic) * x * x * x);
        M t = std::tanh(inner);
        M d_inner = M(kSqrt2OverPi) * (M(1) + M(3 * kGeluCubic) * x * x);
        return g * (M(0.5) * (M(1) + t) + M(0.5) * x * (M(1) - t * t) * d_inner);
      });
      return;
  }
}

void unary_backward_kernel(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& saved) {
  visit_floating(grad_in.dtype(), unary_op_name(op),
                 [&]<class T>() { unary_backward_typed<T>(op, grad_in, grad_out, saved); });
}

template <class M>
M bound_value(const std::optional<Scalar>& bound, M absent) {
  if (!bound) return absent;
  return std::is_integral_v<M> ? static_cast<M>(bound->to_int()) : static_cast<M>(bound->to_double());
}

void clamp_kernel(const Tensor& out, const Tensor& in, const std::optional<Scalar>& low,
                  const std::optional<Scalar>& high) {
  visit_numeric(out.dtype(), "clamp", [&]<class T>() {
    using M = opmath_t<T>;
    using Limits = std::numeric_limits<M>;
    const M lo = bound_value<M>(low, Limits::has_infinity ? -Limits::infinity() : Limits::lowest());
    const M hi = bound_value<M>(high, Limits::has_infinity ? Limits::infinity() : Limits::max());
    // Comparisons with NaN are false, so NaN passes through.
    apply<T>(out, in, [lo, hi](M x) {
      M v = x < lo ? lo : x;
      return v > hi ? hi : v;
    });
  });
}

const KernelRegistrar reg_unary(kernels::unary, DeviceType::kCPU, &unary_kernel);
const KernelRegistrar reg_unary_backward(kernels::unary_backward, DeviceType::kCPU, &unary_backward_kernel);
const KernelRegistrar reg_clamp(kernels::clamp, DeviceType::kCPU, &clamp_kernel);

}  // namespace
}  // namespace syncgrad::cpu
