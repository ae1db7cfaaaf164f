// CUDA unary kernels (neg, abs, relu, ..., gelu), their gradient kernels, and clamp with scalar bounds, with
// the formulas of the CPU kernels (tensor/cpu/unary.cpp); half types compute in float.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/elementwise_kernels.h"
#include "tensor/cuda/parallel.cuh"

namespace syncgrad::cuda {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi), the tanh-gelu scale
constexpr double kGeluCubic = 0.044715;              // the tanh-gelu cubic coefficient
constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1 / sqrt(2 pi), the normal density at 0
constexpr double kSqrtHalf = 0.7071067811865476;     // 1 / sqrt(2)

// x < 0, false for unsigned types (without comparing an unsigned value with 0).
template <class M>
__host__ __device__ __forceinline__ bool is_negative(M x) {
  if constexpr (std::is_unsigned_v<M>) return false;
  else return x < M(0);
}

template <class M>
__host__ __device__ __forceinline__ M apply_unary(UnaryKind op, M x) {
  switch (op) {
    case UnaryKind::neg: return static_cast<M>(-x);
    case UnaryKind::abs: return is_negative(x) ? static_cast<M>(-x) : x;
    // x < 0 rather than x > 0 keeps NaN.
    case UnaryKind::relu: return is_negative(x) ? M(0) : x;
    case UnaryKind::square: return static_cast<M>(x * x);
    case UnaryKind::sign: return static_cast<M>((M(0) < x) - is_negative(x));
    default: break;
  }
  if constexpr (std::is_floating_point_v<M>) {
    switch (op) {
      case UnaryKind::exp: return dmath::exp(x);
      case UnaryKind::log: return dmath::log(x);
      case UnaryKind::log1p: return dmath::log1p(x);
      case UnaryKind::sqrt: return dmath::sqrt(x);
      case UnaryKind::rsqrt: return M(1) / dmath::sqrt(x);
      case UnaryKind::sigmoid: return M(1) / (M(1) + dmath::exp(-x));
      case UnaryKind::tanh: return dmath::tanh(x);
      case UnaryKind::gelu: return M(0.5) * x * (M(1) + dmath::erf(x * M(kSqrtHalf)));
      case UnaryKind::gelu_tanh:
        return M(0.5) * x * (M(1) + dmath::tanh(M(kSqrt2OverPi) * (x + M(kGeluCubic) * x * x * x)));
      default: break;
    }
  }
  return x;
}

// grad_out * op'(s), with s the op's result or input (see kernels::unary_backward).
template <class M>
__host__ __device__ __forceinline__ M apply_unary_backward(UnaryKind op, M g, M s) {
  switch (op) {
    case UnaryKind::neg: return -g;
    case UnaryKind::sign: return M(0);
    // abs'(0) = 0 and relu'(0) = 0, as PyTorch.
    case UnaryKind::abs: return g * M((M(0) < s) - (s < M(0)));
    case UnaryKind::relu: return s > M(0) ? g : M(0);
    case UnaryKind::square: return M(2) * g * s;
    case UnaryKind::exp: return g * s;
    case UnaryKind::log: return g / s;
    case UnaryKind::log1p: return g / (M(1) + s);
    case UnaryKind::sqrt: return g / (M(2) * s);
    case UnaryKind::rsqrt: return M(-0.5) * g * s * s * s;
    case UnaryKind::sigmoid: return g * s * (M(1) - s);
    case UnaryKind::tanh: return g * (M(1) - s * s);
    case UnaryKind::gelu: {
      // d/dx x Phi(x) = Phi(x) + x phi(x)
      const M cdf = M(0.5) * (M(1) + dmath::erf(s * M(kSqrtHalf)));
      const M pdf = M(kInvSqrt2Pi) * dmath::exp(M(-0.5) * s * s);
      return g * (cdf + s * pdf);
    }
    case UnaryKind::gelu_tanh: {
      const M inner = M(kSqrt2OverPi) * (s + M(kGeluCubic) * s * s * s);
      const M t = dmath::tanh(inner);
      const M d_inner = M(kSqrt2OverPi) * (M(1) + M(3 * kGeluCubic) * s * s);
      return g * (M(0.5) * (M(1) + t) + M(0.5) * s * (M(1) - t * t) * d_inner);
    }
  }
  return g;
}

template <class T>
void unary_typed(UnaryKind op, T* out, const T* in, const Geometry<2>& g, cudaStream_t stream) {
  using M = opmath_t<T>;
  for_each_offset<2>(g, stream, [=] SG_LAMBDA(const Offsets<2>& o) {
    out[o.at[0]] = convert<T>(apply_unary<M>(op, static_cast<M>(op_value(in[o.at[1]]))));
  });
}

template <class T>
void unary_backward_typed(UnaryKind op, T* grad_in, const T* grad_out, const T* saved, const Geometry<3>& g,
                          cudaStream_t stream) {
  using M = opmath_t<T>;
  for_each_offset<3>(g, stream, [=] SG_LAMBDA(const Offsets<3>& o) {
    grad_in[o.at[0]] = convert<T>(apply_unary_backward<M>(op, static_cast<M>(op_value(grad_out[o.at[1]])),
                                                          static_cast<M>(op_value(saved[o.at[2]]))));
  });
}

template <class M>
M bound_value(const ScalarArg* bound, M absent) {
  if (bound == nullptr) return absent;
  return std::is_integral_v<M> ? static_cast<M>(bound->integer) : static_cast<M>(bound->real);
}

template <class T>
void clamp_typed(T* out, const T* in, const ScalarArg* low, const ScalarArg* high, const Geometry<2>& g,
                 cudaStream_t stream) {
  using M = opmath_t<T>;
  using Limits = std::numeric_limits<M>;
  const M lo = bound_value<M>(low, Limits::has_infinity ? -Limits::infinity() : Limits::lowest());
  const M hi = bound_value<M>(high, Limits::has_infinity ? Limits::infinity() : Limits::max());
  // Comparisons with NaN are false, so NaN passes through.
  for_each_offset<2>(g, stream, [=] SG_LAMBDA(const Offsets<2>& o) {
    const M x = static_cast<M>(op_value(in[o.at[1]]));
    const M v = x < lo ? lo : x;
    out[o.at[0]] = convert<T>(v > hi ? hi : v);
  });
}

}  // namespace

void launch_unary(UnaryKind op, DType dtype, void* out, const void* in, const Geometry<2>& g, cudaStream_t stream) {
  visit_numeric(dtype,
                [&]<class T>() { unary_typed<T>(op, static_cast<T*>(out), static_cast<const T*>(in), g, stream); });
}

void launch_unary_backward(UnaryKind op, DType dtype, void* grad_in, const void* grad_out, const void* saved,
                           const Geometry<3>& g, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    unary_backward_typed<T>(op, static_cast<T*>(grad_in), static_cast<const T*>(grad_out), static_cast<const T*>(saved),
                            g, stream);
  });
}

void launch_clamp(DType dtype, void* out, const void* in, const ScalarArg* low, const ScalarArg* high,
                  const Geometry<2>& g, cudaStream_t stream) {
  visit_numeric(
      dtype, [&]<class T>() { clamp_typed<T>(static_cast<T*>(out), static_cast<const T*>(in), low, high, g, stream); });
}

}  // namespace syncgrad::cuda
