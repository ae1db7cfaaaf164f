// Dtype dispatch for the kernel launchers (included only by .cu files): calls f.template operator()<T>() with
// the CUDA element type of a DType from a subset. The glue has already refused other dtypes, so a dtype
// outside the subset does nothing here.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace syncgrad::cuda {

// f32, f64, f16, bf16.
template <class F>
void visit_floating(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f.template operator()<float>(); break;
    case DType::f64: f.template operator()<double>(); break;
    case DType::f16: f.template operator()<__half>(); break;
    case DType::bf16: f.template operator()<__nv_bfloat16>(); break;
    default: break;
  }
}

// Every dtype but bool.
template <class F>
void visit_numeric(DType dtype, F&& f) {
  switch (dtype) {
    case DType::i64: f.template operator()<int64_t>(); break;
    case DType::i32: f.template operator()<int32_t>(); break;
    case DType::u8: f.template operator()<uint8_t>(); break;
    default: visit_floating(dtype, f); break;
  }
}

// int64 and int32 index tensors.
template <class F>
void visit_index(DType dtype, F&& f) {
  if (dtype == DType::i32) f.template operator()<int32_t>();
  else f.template operator()<int64_t>();
}

// An unsigned integer type of the dtype's width, for kernels that only move elements.
template <class F>
void visit_bits(DType dtype, F&& f) {
  switch (element_size(dtype)) {
    case 1: f.template operator()<uint8_t>(); break;
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    default: f.template operator()<uint64_t>(); break;
  }
}

}  // namespace syncgrad::cuda
