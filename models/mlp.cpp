// models::MLP: three Linear layers with ReLU between them.
#include "models/mlp.h"

#include "autograd/ops/elementwise.h"
#include "autograd/ops/views.h"
#include "tensor/check.h"
#include "tensor/ops/views.h"

namespace syncgrad::models {

MLP::MLP(Generator* gen)
    : Module("MLP"),
      fc1(register_module("fc1", std::make_shared<nn::Linear>(784, 256, true, gen))),
      fc2(register_module("fc2", std::make_shared<nn::Linear>(256, 256, true, gen))),
      fc3(register_module("fc3", std::make_shared<nn::Linear>(256, 10, true, gen))) {}

Tensor MLP::forward(const Tensor& input) {
  bool image = input.dim() == 4 && input.size(1) == 1 && input.size(2) == 28 && input.size(3) == 28;
  bool flat = input.dim() == 2 && input.size(1) == 784;
  SYNCGRAD_CHECK(image || flat, ShapeError, "MLP.forward: expected input of shape [N, 1, 28, 28] or [N, 784], got ",
                 shape_str(input.sizes()));
  Tensor x = image ? flatten(input, 1) : input;
  x = relu(fc1->forward(x));
  x = relu(fc2->forward(x));
  return fc3->forward(x);
}

}  // namespace syncgrad::models
