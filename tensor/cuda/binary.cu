// CUDA binary arithmetic kernels (add, sub, mul, div, pow, maximum, minimum, add with alpha) over strided,
// broadcast operands, one generic strided-offset kernel per dtype with a contiguous fast path
// (parallel.cuh); half types compute in float, integers as the CPU kernels do (tensor/cpu/elementwise_binary.cpp).
#include <cstdint>
#include <type_traits>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/elementwise_kernels.h"
#include "tensor/cuda/parallel.cuh"
#include "tensor/int_pow.h"

namespace syncgrad::cuda {
namespace {

// x (op) y in opmath M, converted to the element type T.
template <class T, class M>
__host__ __device__ __forceinline__ T apply_binary(BinaryKind op, M x, M y) {
  if constexpr (std::is_same_v<M, bool>) {
    return (op == BinaryKind::add || op == BinaryKind::maximum) ? (x || y) : (x && y);
  } else {
    switch (op) {
      case BinaryKind::add: return convert<T>(x + y);
      case BinaryKind::sub: return convert<T>(x - y);
      case BinaryKind::mul: return convert<T>(x * y);
      case BinaryKind::div: return convert<T>(x / y);
      case BinaryKind::pow:
        if constexpr (std::is_floating_point_v<M>) return convert<T>(dmath::pow(x, y));
        else return convert<T>(int_pow<M>(x, y));
      // NaN propagates from either side.
      case BinaryKind::maximum: return convert<T>((is_nan(x) || x > y) ? x : y);
      case BinaryKind::minimum: return convert<T>((is_nan(x) || x < y) ? x : y);
    }
    return T{};
  }
}

template <class T>
void binary_typed(BinaryKind op, T* out, const T* a, const T* b, const Geometry<3>& g, cudaStream_t stream) {
  using M = opmath_t<T>;
  for_each_offset<3>(g, stream, [=] SG_LAMBDA(const Offsets<3>& o) {
    out[o.at[0]] = apply_binary<T, M>(op, static_cast<M>(op_value(a[o.at[1]])), static_cast<M>(op_value(b[o.at[2]])));
  });
}

template <class T>
void add_scaled_typed(T* out, const T* a, const T* b, ScalarArg alpha, const Geometry<3>& g, cudaStream_t stream) {
  using M = opmath_t<T>;
  const M s = std::is_integral_v<M> ? static_cast<M>(alpha.integer) : static_cast<M>(alpha.real);
  for_each_offset<3>(g, stream, [=] SG_LAMBDA(const Offsets<3>& o) {
    out[o.at[0]] = convert<T>(static_cast<M>(op_value(a[o.at[1]])) + s * static_cast<M>(op_value(b[o.at[2]])));
  });
}

}  // namespace

void launch_binary(BinaryKind op, DType dtype, void* out, const void* a, const void* b, const Geometry<3>& g,
                   cudaStream_t stream) {
  visit_dtype(dtype, [&]<class T>() {
    binary_typed<T>(op, static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), g, stream);
  });
}

void launch_add_scaled(DType dtype, void* out, const void* a, const void* b, ScalarArg alpha, const Geometry<3>& g,
                       cudaStream_t stream) {
  visit_numeric(dtype, [&]<class T>() {
    add_scaled_typed<T>(static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), alpha, g, stream);
  });
}

}  // namespace syncgrad::cuda
