// Math for the kernel bodies (included only by .cu files): the float/double functions of the CUDA math
// library on the GPU and of libm on the host (the emulated module), under one name per function; the type
// arithmetic happens in (OpMath: float for the half types); NaN/inf tests that need no <cmath>; atomics that
// are plain read-modify-writes in the sequential host build; loads and stores of an element given its dtype
// at run time (for the small per-channel vectors of the norm kernels).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tensor/cuda/convert.cuh"
#include "tensor/dtype.h"

namespace syncgrad::cuda {

template <class T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<__half> {
  using type = float;
};
template <>
struct OpMath<__nv_bfloat16> {
  using type = float;
};
template <>
struct OpMath<bool> {
  using type = bool;
};
template <class T>
using opmath_t = typename OpMath<T>::type;

template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<opmath_t<T>>;

namespace dmath {

#define SG_MATH_UNARY(name)                                                        \
  __host__ __device__ __forceinline__ float name(float x) { return ::name##f(x); } \
  __host__ __device__ __forceinline__ double name(double x) { return ::name(x); }
SG_MATH_UNARY(exp)
SG_MATH_UNARY(log)
SG_MATH_UNARY(log1p)
SG_MATH_UNARY(sqrt)
SG_MATH_UNARY(tanh)
SG_MATH_UNARY(erf)
SG_MATH_UNARY(cos)
SG_MATH_UNARY(fabs)
#undef SG_MATH_UNARY

__host__ __device__ __forceinline__ float pow(float x, float y) { return ::powf(x, y); }
__host__ __device__ __forceinline__ double pow(double x, double y) { return ::pow(x, y); }

}  // namespace dmath

template <class M>
__host__ __device__ __forceinline__ bool is_nan(M v) {
  if constexpr (std::is_floating_point_v<M>) return v != v;
  else return false;
}

// Infinite (either sign); false for NaN and for integers.
template <class M>
__host__ __device__ __forceinline__ bool is_inf(M v) {
  if constexpr (std::is_floating_point_v<M>) return v == v && (v - v) != (v - v);
  else return false;
}

template <class M>
__host__ __device__ __forceinline__ M infinity() {
  return std::numeric_limits<M>::infinity();
}

// The value of element `i` of `p` (of dtype `dtype`) as double; writes go the other way. Used where a small
// operand may have any floating dtype (batch norm's weight, bias and running statistics).
__host__ __device__ __forceinline__ double load_as_double(const void* p, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::f64: return static_cast<const double*>(p)[i];
    case DType::f16: return half_to_float(static_cast<const __half*>(p)[i]);
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return 0.0;
  }
}

__host__ __device__ __forceinline__ void store_from_double(void* p, DType dtype, int64_t i, double v) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(p)[i] = double_to_float(v); break;
    case DType::f64: static_cast<double*>(p)[i] = v; break;
    case DType::f16: static_cast<__half*>(p)[i] = convert<__half>(v); break;
    case DType::bf16: static_cast<__nv_bfloat16*>(p)[i] = convert<__nv_bfloat16>(v); break;
    default: break;
  }
}

// ---- atomics (device: hardware atomics; host: the emulated build runs bodies one at a time) ----

#if defined(__CUDACC__)

namespace detail {
// Read-modify-write of a 1-byte value through compare-and-swap on its aligned 32-bit word.
template <class T, class Update>
__device__ void atomic_byte_update(T* address, Update update) {
  static_assert(sizeof(T) == 1);
  const uintptr_t raw = reinterpret_cast<uintptr_t>(address);
  unsigned int* word = reinterpret_cast<unsigned int*>(raw & ~uintptr_t{3});
  const unsigned int shift = static_cast<unsigned int>(raw & 3) * 8;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    T current;
    const uint8_t byte = static_cast<uint8_t>((assumed >> shift) & 0xffu);
    memcpy(&current, &byte, 1);
    const T next = update(current);
    uint8_t next_byte;
    memcpy(&next_byte, &next, 1);
    const unsigned int replaced = (assumed & ~(0xffu << shift)) | (static_cast<unsigned int>(next_byte) << shift);
    old = atomicCAS(word, assumed, replaced);
  } while (assumed != old);
}
}  // namespace detail

// *address += value, computed in opmath and stored in T (bool: or).
template <class T>
__device__ __forceinline__ void atomic_add(T* address, T value) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, __half> ||
                std::is_same_v<T, int32_t>) {
    atomicAdd(address, value);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    atomicAdd(address, value);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    detail::atomic_byte_update(address, [value](bool current) { return current || value; });
  } else {
    static_assert(std::is_same_v<T, uint8_t>);
    detail::atomic_byte_update(address, [value](uint8_t current) { return static_cast<uint8_t>(current + value); });
  }
}

__device__ __forceinline__ void atomic_min(int64_t* address, int64_t value) {
  atomicMin(reinterpret_cast<long long*>(address), static_cast<long long>(value));
}

__device__ __forceinline__ void atomic_count(int64_t* address, int64_t value) {
  atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(value));
}

#else

template <class T>
inline void atomic_add(T* address, T value) {
  if constexpr (std::is_same_v<T, bool>) {
    *address = *address || value;
  } else {
    *address = convert<T>(op_value(*address) + op_value(value));
  }
}

inline void atomic_min(int64_t* address, int64_t value) {
  if (value < *address) *address = value;
}

inline void atomic_count(int64_t* address, int64_t value) { *address += value; }

#endif

}  // namespace syncgrad::cuda
