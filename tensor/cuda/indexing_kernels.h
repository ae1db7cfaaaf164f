// Launchers of the indexing kernels (indexing.cu), called by indexing_ops.cpp: the index range check, the
// embedding lookup and its backward, and the two strided primitives the indexing ops are built from.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/cuda/launch.h"
#include "tensor/dtype.h"

namespace syncgrad::cuda {

// *first_bad = min(*first_bad, smallest i with index[i] outside [0, size)) over a contiguous index (i64/i32).
void launch_check_indices(DType index_dtype, const void* index, int64_t count, int64_t size, int64_t* first_bad,
                          cudaStream_t stream);

// out (count, dim) = rows index[m] of weight (num, dim); dtype any (rows are moved as bits).
void launch_embedding(DType dtype, void* out, const void* weight, DType index_dtype, const void* index, int64_t count,
                      int64_t dim, cudaStream_t stream);
// grad_weight[index[m]] += grad_out[m] (floating dtype, atomic adds) for every m with index[m] != padding_idx.
void launch_embedding_backward(DType dtype, void* grad_weight, const void* grad_out, DType index_dtype,
                               const void* index, int64_t count, int64_t dim, int64_t padding_idx, cudaStream_t stream);

// Operands of g: out, line base, index. out[p] = line_base[p][index[p] * step] (dtype any).
void launch_gather_lines(DType dtype, DType index_dtype, void* out, const void* line_base, const void* index,
                         int64_t step, const Geometry<3>& g, cudaStream_t stream);
// Operands of g: line base, src, index. line_base[p][index[p] * step] += src[p] (atomic adds; bool: or).
void launch_scatter_add_lines(DType dtype, DType index_dtype, void* line_base, const void* src, const void* index,
                              int64_t step, const Geometry<3>& g, cudaStream_t stream);

}  // namespace syncgrad::cuda
