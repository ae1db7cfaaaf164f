// Element types and conversions for CUDA kernels (included only by .cu files). The conversions follow the
// CPU kernels (tensor/cpu/visit.h, convert<To>(From)) bit for bit: the half types go through float (a double
// becomes float first, then half, as Eigen does), to bool is `!= 0`, and NaNs keep their sign (and payload
// bits where x86 keeps them). Host and device functions, so they can be checked without a GPU.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tensor/dtype.h"

namespace syncgrad::cuda {

template <class To, class From>
__host__ __device__ __forceinline__ To bit_cast_value(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  memcpy(static_cast<void*>(&out), static_cast<const void*>(&v), sizeof(To));
  return out;
}

// NaN conversions between float widths follow x86 (what the CPU kernels get): the sign and the top payload
// bits are kept and the quiet bit is set. (The GPU's own cvt would give one canonical NaN instead.)
__host__ __device__ __forceinline__ float double_to_float(double d) {
  if (d != d) {
    const uint64_t b = bit_cast_value<uint64_t>(d);
    const uint32_t f = static_cast<uint32_t>((b >> 32) & 0x80000000u) | 0x7fc00000u |
                       static_cast<uint32_t>((b >> 29) & 0x3fffffu);
    return bit_cast_value<float>(f);
  }
  return static_cast<float>(d);
}
__host__ __device__ __forceinline__ double float_to_double(float f) {
  if (f != f) {
    const uint32_t b = bit_cast_value<uint32_t>(f);
    const uint64_t d = (static_cast<uint64_t>(b & 0x80000000u) << 32) | 0x7ff8000000000000ull |
                       (static_cast<uint64_t>(b & 0x3fffffu) << 29);
    return bit_cast_value<double>(d);
  }
  return static_cast<double>(f);
}
__host__ __device__ __forceinline__ float half_to_float(__half h) {
  const uint16_t b = bit_cast_value<uint16_t>(h);
  if ((b & 0x7fffu) > 0x7c00u) {
    const uint32_t f = (static_cast<uint32_t>(b & 0x8000u) << 16) | 0x7fc00000u | (static_cast<uint32_t>(b & 0x3ffu) << 13);
    return bit_cast_value<float>(f);
  }
  return __half2float(h);
}

// The value of v in the type arithmetic happens in (float for the half types).
template <class T>
__host__ __device__ __forceinline__ auto op_value(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return half_to_float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);  // exact, NaN included (a shift of the bits)
  } else {
    return v;
  }
}

template <class T>
__host__ __device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return double_to_float(v);
  } else {
    return static_cast<float>(v);
  }
}

// Eigen's float -> half and float -> bfloat16 conversions: round to nearest even; NaN -> 0x7e00 / 0x7fc0
// with its sign (no payload).
__host__ __device__ __forceinline__ __half float_to_half(float f) {
  if (f != f) {
    const uint32_t b = bit_cast_value<uint32_t>(f);
    return bit_cast_value<__half>(static_cast<uint16_t>(((b >> 16) & 0x8000u) | 0x7e00u));
  }
  return __float2half_rn(f);
}
__host__ __device__ __forceinline__ __nv_bfloat16 float_to_bfloat16(float f) {
  if (f != f) {
    const uint32_t b = bit_cast_value<uint32_t>(f);
    return bit_cast_value<__nv_bfloat16>(static_cast<uint16_t>(((b >> 16) & 0x8000u) | 0x7fc0u));
  }
  return __float2bfloat16_rn(f);
}

template <class To, class From>
__host__ __device__ __forceinline__ To convert(From v) {
  using M = decltype(op_value(v));
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return op_value(v) != M(0);
  } else if constexpr (std::is_same_v<To, __half>) {
    return float_to_half(to_float(op_value(v)));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return float_to_bfloat16(to_float(op_value(v)));
  } else if constexpr (std::is_same_v<To, float> && std::is_same_v<M, double>) {
    return double_to_float(v);
  } else if constexpr (std::is_same_v<To, double> && std::is_same_v<M, float>) {
    return float_to_double(op_value(v));
  } else {
    return static_cast<To>(op_value(v));
  }
}

// Calls f.template operator()<T>() with the CUDA element type of `dtype`.
template <class F>
void visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f.template operator()<float>(); break;
    case DType::f64: f.template operator()<double>(); break;
    case DType::f16: f.template operator()<__half>(); break;
    case DType::bf16: f.template operator()<__nv_bfloat16>(); break;
    case DType::i64: f.template operator()<int64_t>(); break;
    case DType::i32: f.template operator()<int32_t>(); break;
    case DType::u8: f.template operator()<uint8_t>(); break;
    case DType::boolean: f.template operator()<bool>(); break;
  }
}

}  // namespace syncgrad::cuda
