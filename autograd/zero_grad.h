// Resetting accumulated gradients between steps.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace syncgrad::autograd {

// set_to_none (PyTorch's default): drop .grad, so the next backward stores a fresh gradient (no add, no
// memset). Otherwise fill existing gradients with zeros in place (keeps buffers, e.g. DDP bucket views).
void zero_grad(const std::vector<Tensor>& params, bool set_to_none = true);

}  // namespace syncgrad::autograd
