// DType sizes, names and promotion rules.
#include "tensor/dtype.h"

#include "tensor/errors.h"

namespace syncgrad {

size_t element_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i64: return 8;
    case DType::i32: return 4;
    case DType::u8: return 1;
    case DType::boolean: return 1;
  }
  throw DTypeError("element_size: unknown dtype code " + std::to_string(static_cast<int>(t)));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::i64: return "int64";
    case DType::i32: return "int32";
    case DType::u8: return "uint8";
    case DType::boolean: return "bool";
  }
  return "unknown";
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

bool is_integral(DType t, bool include_bool) {
  return t == DType::i64 || t == DType::i32 || t == DType::u8 || (include_bool && t == DType::boolean);
}

namespace {
int category(DType t) {
  if (t == DType::boolean) return 0;
  if (is_integral(t)) return 1;
  return 2;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) {
    // Integers: u8 mixes with signed types by widening to the signed type (i32/i64 hold all of u8).
    if (a == DType::i64 || b == DType::i64) return DType::i64;
    return DType::i32;
  }
  // Floating.
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  if (a == DType::f32 || b == DType::f32) return DType::f32;
  return DType::f32;  // f16 with bf16: neither holds the other
}

DType default_float_dtype() { return DType::f32; }

}  // namespace syncgrad
