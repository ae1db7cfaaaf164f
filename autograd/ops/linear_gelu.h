// Differentiable linear layer followed by GELU in one op: gelu(linear(input, weight, bias), approximate), the
// first half of a transformer's feed-forward block (GPT's c_fc and its activation).
#pragma once

#include "tensor/ops/unary.h"
#include "tensor/tensor.h"

namespace syncgrad {

// input (*, in_features), weight (out_features, in_features), optional bias (out_features) -> (*, out_features),
// equal to gelu(linear(input, weight, bias), approximate) as composed from the two ops. On the CPU in float32 with
// the tanh approximation it runs the fused kernels of tensor/ops/linear_gelu.h (the pre-activation is read back
// from cache in the forward; its gradient never reaches memory in the backward); elsewhere the two ops. Saves
// the pre-activation, and input / weight where the other needs a gradient, as the composition would. Under
// autocast it follows linear's policy (the lower precision).
Tensor linear_gelu(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                   GeluApproximate approximate = GeluApproximate::none);

}  // namespace syncgrad
