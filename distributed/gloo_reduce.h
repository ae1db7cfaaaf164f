// Element-wise reduction kernels for the Gloo process group: Gloo calls them with raw buffers while it
// combines the ranks' contributions (half types are reduced in float, as PyTorch does). A private header: it
// includes Gloo.
#pragma once

#include <gloo/algorithm.h>

#include <cstddef>

#include "distributed/process_group.h"
#include "tensor/dtype.h"

namespace syncgrad::distributed {

// out[i] = op(a[i], b[i]); out may alias a or b.
using ReduceKernel = void (*)(void* out, const void* a, const void* b, size_t n);

// The kernel for `op` on `dtype` (kAvg reduces with sum; divide afterwards with divide_in_place). Throws
// DTypeError for combinations that have no meaning (bool, or kAvg on an integer dtype).
ReduceKernel reduce_kernel(DType dtype, ReduceOp op, const char* collective);

// The same reduction as Gloo's legacy algorithms want it (x = op(x, y)), for gloo element type T: float, double,
// int64_t, int32_t, uint8_t, or uint16_t for f16 and bf16 (told apart by `dtype`). kAvg reduces with sum.
template <class T>
const gloo::ReductionFunction<T>* legacy_reduction(DType dtype, ReduceOp op);

// data[i] /= divisor for n elements of a floating dtype.
void divide_in_place(void* data, DType dtype, size_t n, double divisor);

}  // namespace syncgrad::distributed
