// Differentiable dropout (PyTorch's F.dropout semantics).
#pragma once

#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace syncgrad {

// In training, zeroes each element with probability p (mask drawn from `gen`, default the process generator)
// and scales the kept ones by 1 / (1 - p); p == 1 gives zeros. When !training or p == 0 the input itself is
// returned. p outside [0, 1] is a ValueError.
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true, Generator* gen = nullptr);

}  // namespace syncgrad
