// Launchers of the reduction and softmax kernel files (reduce.cu, softmax.cu), called by the host glue
// (reduce_ops.cpp, softmax_ops.cpp). Tensors arrive as plain pointers; "(outer, size, inner)" is a contiguous
// tensor seen around one dim (element (o, k, i) at (o * size + k) * inner + i).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/cuda/launch.h"
#include "tensor/dtype.h"

namespace syncgrad::cuda {

// How sum_into spreads its work: a block of threads per output (the reduced elements of an output are near
// each other, or there are few outputs), or a thread per output (outputs are neighbours in memory).
enum class SumStrategy : uint8_t { block_per_output, thread_per_output };

// reduce.cu. Adds the sum of `in`'s reduced elements into each output element. `kept` walks the outputs
// (operand 0: out, operand 1: in's element at the output's first reduced position); `reduced` walks the
// reduced positions of one output in `in`. Accumulates in float (f32/f16/bf16 out), double (f64) or int64
// (integer out) and stores in out_dtype.
void launch_sum(DType out_dtype, DType in_dtype, void* out, const void* in, const Geometry<2>& kept,
                const Geometry<1>& reduced, SumStrategy strategy, cudaStream_t stream);
// values (dtype) and indices of the first extremum along `size` of in (outer, size, inner); NaN wins.
void launch_minmax_dim(DType dtype, void* values, int64_t* indices, const void* in, int64_t outer, int64_t size,
                       int64_t inner, bool largest, cudaStream_t stream);
// grad_in (outer, size, inner), zeroed, gets grad (outer, inner) at the indices (floating dtype).
void launch_index_backward(DType dtype, void* grad_in, const void* grad, const int64_t* indices, int64_t outer,
                           int64_t size, int64_t inner, cudaStream_t stream);
// grad_in[i] (grad_dtype, zeroed) = grad / count at every i with in[i] == *value (NaN matches NaN); n > 0.
void launch_ties_backward(DType in_dtype, DType grad_dtype, void* grad_in, const void* in, int64_t n, const void* value,
                          const void* grad, cudaStream_t stream);
// out (rows) = variance of each row of in (rows, cols), in double, dividing by max(cols - correction, 0);
// its square root when `root`.
void launch_var_rows(DType dtype, void* out, const void* in, int64_t rows, int64_t cols, int64_t correction, bool root,
                     cudaStream_t stream);
// out (rows) = log(sum(exp(row))), shifted by the row maximum.
void launch_logsumexp_rows(DType dtype, void* out, const void* in, int64_t rows, int64_t cols, cudaStream_t stream);

// softmax.cu. Softmax (or log_softmax) along `size` of (outer, size, inner), floating dtypes.
void launch_softmax(DType dtype, void* out, const void* in, int64_t outer, int64_t size, int64_t inner, bool log,
                    cudaStream_t stream);
// softmax: grad_in = out * (grad_out - sum(grad_out * out)); log_softmax: grad_in = grad_out - exp(out) *
// sum(grad_out).
void launch_softmax_backward(DType dtype, void* grad_in, const void* grad_out, const void* out, int64_t outer,
                             int64_t size, int64_t inner, bool log, cudaStream_t stream);

}  // namespace syncgrad::cuda
