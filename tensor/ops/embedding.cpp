// Raw embedding front-ends: argument checks, flattening the indices, output allocation and dispatch.
#include "tensor/ops/embedding.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&)> embedding("embedding");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, int64_t)> embedding_backward(
    "embedding_backward");
}  // namespace kernels

namespace raw {
namespace {

Tensor flat_indices(const Tensor& indices) { return reshape(contiguous(indices), {indices.numel()}); }

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  check_same_device("embedding", weight, indices);
  SYNCGRAD_CHECK(weight.dim() == 2, ShapeError,
                 "embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape ",
                 shape_str(weight.sizes()));
  SYNCGRAD_CHECK(indices.dtype() == DType::i64 || indices.dtype() == DType::i32, DTypeError,
                 "embedding: indices have dtype ", dtype_name(indices.dtype()),
                 "; expects int64 or int32; convert with .to(DType::i64)");
  int64_t dim = weight.sizes()[1];
  Tensor out = empty({indices.numel(), dim}, {.dtype = weight.dtype(), .device = weight.device()});
  kernels::embedding(weight.device(), out, contiguous(weight), flat_indices(indices));
  Shape shape = indices.sizes();
  shape.push_back(dim);
  return view(out, shape);
}

int64_t embedding_padding_index(int64_t padding_idx, int64_t num_embeddings) {
  SYNCGRAD_CHECK(padding_idx >= -num_embeddings && padding_idx < num_embeddings, ValueError, "embedding: padding_idx ",
                 padding_idx, " is outside [", -num_embeddings, ", ", num_embeddings, ") for num_embeddings ",
                 num_embeddings);
  return padding_idx < 0 ? padding_idx + num_embeddings : padding_idx;
}

Tensor embedding_backward(const Tensor& grad_out, const Tensor& indices, int64_t num_embeddings,
                          std::optional<int64_t> padding_idx) {
  int64_t dim = grad_out.sizes().back();
  Tensor grad_weight = zeros({num_embeddings, dim}, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  int64_t padding = padding_idx ? embedding_padding_index(*padding_idx, num_embeddings) : -1;
  kernels::embedding_backward(grad_out.device(), grad_weight, reshape(contiguous(grad_out), {indices.numel(), dim}),
                              flat_indices(indices), padding);
  return grad_weight;
}

}  // namespace raw
}  // namespace syncgrad
