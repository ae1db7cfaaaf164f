// CPU dtype dispatch: calls a templated lambda with the C++ element type of a DType. Half types map to
// Eigen::half / Eigen::bfloat16 (bit-identical to CUDA's __half / __nv_bfloat16).
//   visit_all(t.dtype(), "add", [&]<class T>() { ... });
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>

#include "tensor/cpu/half_convert.h"
#include "tensor/dtype.h"
#include "tensor/errors.h"

namespace syncgrad::cpu {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

// The type arithmetic on T is carried out in (float for the half types).
template <class T> struct OpMath { using type = T; };
template <> struct OpMath<half> { using type = float; };
template <> struct OpMath<bfloat16> { using type = float; };
template <class T> using opmath_t = typename OpMath<T>::type;

[[noreturn]] inline void unsupported_dtype(const char* op, DType t, const char* allowed) {
  throw DTypeError(std::string(op) + ": dtype " + dtype_name(t) + " is not supported (supported: " + allowed + ")");
}

template <class F> decltype(auto) visit_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
    case DType::f16: return f.template operator()<half>();
    case DType::bf16: return f.template operator()<bfloat16>();
    default: unsupported_dtype(op, t, "float32, float64, float16, bfloat16");
  }
}

template <class F> decltype(auto) visit_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
    case DType::f16: return f.template operator()<half>();
    case DType::bf16: return f.template operator()<bfloat16>();
    case DType::i64: return f.template operator()<int64_t>();
    case DType::i32: return f.template operator()<int32_t>();
    case DType::u8: return f.template operator()<uint8_t>();
    default: unsupported_dtype(op, t, "all numeric dtypes (not bool)");
  }
}

template <class F> decltype(auto) visit_all(DType t, const char* op, F&& f) {
  if (t == DType::boolean) return f.template operator()<bool>();
  return visit_numeric(t, op, std::forward<F>(f));
}

template <class F> decltype(auto) visit_index(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::i64: return f.template operator()<int64_t>();
    case DType::i32: return f.template operator()<int32_t>();
    default: unsupported_dtype(op, t, "int64, int32 (index tensors)");
  }
}

// Converts between element types, going through float for the half types (bfloat16 with half_convert.h's
// vectorisable conversions, bit-identical to Eigen's).
template <class To, class From> inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != opmath_t<From>(0);
  } else if constexpr (std::is_same_v<From, bfloat16>) {
    return static_cast<To>(to_float(v));
  } else if constexpr (std::is_same_v<From, half>) {
    return static_cast<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bfloat16>) {
    return to_bf16(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace syncgrad::cpu
