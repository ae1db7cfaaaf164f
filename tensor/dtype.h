// Element types a tensor can hold, their sizes and names, and NumPy/PyTorch type promotion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace syncgrad {

enum class DType : uint8_t { f32, f64, f16, bf16, i64, i32, u8, boolean };

inline constexpr int kNumDTypes = 8;

size_t element_size(DType t);
const char* dtype_name(DType t);  // "float32", "bfloat16", ...
bool is_floating(DType t);         // f32, f64, f16, bf16
bool is_integral(DType t, bool include_bool = false);

// Promotion of two tensor dtypes (bool < integers < floating; within a category the wider type wins;
// u8 with a signed integer gives the next wider signed type; f16 with bf16 gives f32).
DType promote_types(DType a, DType b);

// The dtype a value of this C++ type maps to (float -> f32, double -> f64, int64_t -> i64, ...).
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<bool>() { return DType::boolean; }

// The process-wide default floating dtype used by factories and int->float promotion (f32).
DType default_float_dtype();

}  // namespace syncgrad
