// Activation layers and Flatten: forward to the differentiable elementwise and view ops.
#include "nn/activation.h"

#include "autograd/ops/elementwise.h"
#include "autograd/ops/views.h"

namespace syncgrad::nn {

Tensor ReLU::forward(const Tensor& input) { return relu(input); }

Tensor GELU::forward(const Tensor& input) { return gelu(input, approximate); }

std::string GELU::extra_repr() const {
  return approximate == GeluApproximate::tanh ? "approximate='tanh'" : "approximate='none'";
}

Tensor Tanh::forward(const Tensor& input) { return tanh(input); }

Tensor Sigmoid::forward(const Tensor& input) { return sigmoid(input); }

Tensor Flatten::forward(const Tensor& input) { return flatten(input, start_dim, end_dim); }

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

}  // namespace syncgrad::nn
