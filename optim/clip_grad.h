// Gradient clipping by total norm (PyTorch's torch.nn.utils.clip_grad_norm_).
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace syncgrad::optim {

// The norm of order `norm_type` (> 0, or infinity for the largest magnitude) of all the parameters' gradients
// taken together (parameters without a gradient are skipped; 0 when none has one). When it exceeds max_norm,
// every gradient is scaled in place by max_norm / (total_norm + 1e-6). A NaN or infinite norm raises
// ValueError when error_if_nonfinite, else scales by that factor as PyTorch does.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

}  // namespace syncgrad::optim
