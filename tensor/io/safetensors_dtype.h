// The dtype codes of the safetensors header ("F32", "BF16", ...) and their syncgrad dtypes.
#pragma once

#include <optional>
#include <string>

#include "tensor/dtype.h"

namespace syncgrad::io {

inline const char* safetensors_dtype_code(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i64: return "I64";
    case DType::i32: return "I32";
    case DType::u8: return "U8";
    case DType::boolean: return "BOOL";
  }
  return "?";
}

inline std::optional<DType> dtype_from_safetensors_code(const std::string& code) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType dtype = static_cast<DType>(i);
    if (code == safetensors_dtype_code(dtype)) return dtype;
  }
  return std::nullopt;
}

}  // namespace syncgrad::io
