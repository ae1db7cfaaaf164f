// Launchers of the elementwise kernel files (binary.cu, compare.cu, unary.cu), called by the host glue
// (elementwise_ops.cpp) once per piece of the iteration space (tensor/cuda/layout.h): plain pointers to each
// operand's first element, the piece's geometry (operand 0 is the output), the compute stream. Dtypes are
// validated by the glue. The op enums mirror those of tensor/ops/{elementwise,unary}.h (same order; the glue
// checks) so that the .cu files need none of syncgrad's Tensor headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/cuda/launch.h"
#include "tensor/dtype.h"

namespace syncgrad::cuda {

enum class BinaryKind : uint8_t { add, sub, mul, div, pow, maximum, minimum };
enum class CompareKind : uint8_t { eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_xor };
enum class UnaryKind : uint8_t {
  neg,
  abs,
  relu,
  square,
  sign,
  exp,
  log,
  log1p,
  sqrt,
  rsqrt,
  sigmoid,
  tanh,
  gelu,
  gelu_tanh,
};

// A Scalar as kernels take it: integer dtypes use `integer`, floating ones `real` (as the CPU kernels do).
struct ScalarArg {
  double real = 0;
  int64_t integer = 0;
};

// binary.cu. out = a (op) b; all of `dtype` (bool: add/maximum are or, mul/minimum are and).
void launch_binary(BinaryKind op, DType dtype, void* out, const void* a, const void* b, const Geometry<3>& g,
                   cudaStream_t stream);
// out = a + alpha * b (numeric dtypes).
void launch_add_scaled(DType dtype, void* out, const void* a, const void* b, ScalarArg alpha, const Geometry<3>& g,
                       cudaStream_t stream);

// compare.cu. out (bool) = a (op) b with a and b of `dtype`.
void launch_compare(CompareKind op, DType dtype, void* out, const void* a, const void* b, const Geometry<3>& g,
                    cudaStream_t stream);
// out = cond ? a : b; cond bool, the others of `dtype`. Operands: out, cond, a, b.
void launch_where(DType dtype, void* out, const void* cond, const void* a, const void* b, const Geometry<4>& g,
                  cudaStream_t stream);

// unary.cu. out = op(in), both of `dtype` (floating-only ops on floating dtypes).
void launch_unary(UnaryKind op, DType dtype, void* out, const void* in, const Geometry<2>& g, cudaStream_t stream);
// grad_in = grad_out * op'(saved) (floating dtypes); operands grad_in, grad_out, saved.
void launch_unary_backward(UnaryKind op, DType dtype, void* grad_in, const void* grad_out, const void* saved,
                           const Geometry<3>& g, cudaStream_t stream);
// out = min(max(in, low), high), an absent bound skipped; numeric dtypes; NaN stays NaN.
void launch_clamp(DType dtype, void* out, const void* in, const ScalarArg* low, const ScalarArg* high,
                  const Geometry<2>& g, cudaStream_t stream);

}  // namespace syncgrad::cuda
