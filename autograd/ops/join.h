// Differentiable cat, stack, split and chunk: the user-facing versions of tensor/ops/join.h (same checks and
// messages). split and chunk return differentiable narrow views (autograd/ops/views.h).
#pragma once

#include <initializer_list>
#include <vector>

#include "tensor/tensor.h"

namespace syncgrad {

// Backward hands each input its slice of the gradient (converted back to the input's dtype).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Backward hands each input its select() of the gradient along the new dim.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim = 0);
// A braced list always means lengths: split(t, {2}) is one piece of length 2.
std::vector<Tensor> split(const Tensor& t, const Shape& split_sizes, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, std::initializer_list<int64_t> split_sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim = 0);

}  // namespace syncgrad
