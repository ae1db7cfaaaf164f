// Raw (non-differentiable) embedding lookup and its backward (an index-add of the output gradient into the
// rows of a dense weight gradient). The autograd layer (autograd/ops/embedding.h) wraps them.
#pragma once

#include <optional>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// out: contiguous (M, dim); weight: contiguous (num, dim); indices: contiguous (M) of i64 or i32.
// out[m] = weight[indices[m]]; an index outside [0, num) raises IndexError naming it and num.
extern KernelSlot<void(const Tensor& out, const Tensor& weight, const Tensor& indices)> embedding;
// grad_weight: contiguous (num, dim), zeroed; grad_out: contiguous (M, dim); indices: contiguous (M), already
// in range. grad_weight[indices[m]] += grad_out[m] for every m whose index is not padding_idx (-1: none).
extern KernelSlot<void(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& indices, int64_t padding_idx)>
    embedding_backward;
}  // namespace kernels

namespace raw {

// weight (num, dim) of any dtype, indices i64/i32 of any shape -> (*indices.shape, dim).
Tensor embedding(const Tensor& weight, const Tensor& indices);
// padding_idx in [-num, num) (negative counts from the end) -> its non-negative form; ValueError otherwise.
int64_t embedding_padding_index(int64_t padding_idx, int64_t num_embeddings);
// Dense gradient (num_embeddings, dim) of embedding; rows equal to padding_idx (non-negative) get none.
Tensor embedding_backward(const Tensor& grad_out, const Tensor& indices, int64_t num_embeddings,
                          std::optional<int64_t> padding_idx);

}  // namespace raw

}  // namespace syncgrad
