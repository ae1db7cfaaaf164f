// Raw (non-differentiable) softmax and log_softmax along one dim, and their backward, as fused kernels that
// subtract the maximum before exponentiating. Differentiable versions are in autograd/ops/softmax.h.
#pragma once

#include <optional>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// out, in: contiguous, same shape and floating dtype; softmax (or log_softmax when `log`) along `dim`.
extern KernelSlot<void(const Tensor& out, const Tensor& in, int64_t dim, bool log)> softmax;
// grad_in, grad_out, out: contiguous, same shape and dtype; `out` is the forward result.
// softmax: grad_in = out * (grad_out - sum(grad_out * out)); log_softmax: grad_in = grad_out - exp(out) * sum(grad_out).
extern KernelSlot<void(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int64_t dim, bool log)>
    softmax_backward;
}  // namespace kernels

namespace raw {
// exp(t) / sum(exp(t)) along `dim`; `dtype` converts the input first (e.g. f16 logits computed in f32).
Tensor softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype = {});
// t - logsumexp(t) along `dim`.
Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype = {});
// Gradient with respect to the input, given the forward output `out`.
Tensor softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, bool log);
}  // namespace raw

}  // namespace syncgrad
