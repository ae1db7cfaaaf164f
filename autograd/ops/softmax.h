// Differentiable softmax and log_softmax along one dim (fused, numerically stable kernels).
#pragma once

#include <optional>

#include "tensor/tensor.h"

namespace syncgrad {

// `dtype` converts the input first (differentiably), e.g. float16 logits normalised in float32.
Tensor softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype = {});
Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype = {});

}  // namespace syncgrad
