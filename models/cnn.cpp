// models::CNN: two conv/ReLU/max-pool stages and two Linear layers.
#include "models/cnn.h"

#include "autograd/ops/elementwise.h"
#include "autograd/ops/pool.h"
#include "autograd/ops/views.h"
#include "tensor/check.h"
#include "tensor/ops/views.h"

namespace syncgrad::models {

CNN::CNN(Generator* gen)
    : Module("CNN"),
      conv1(register_module("conv1", std::make_shared<nn::Conv2d>(1, 32, 5, 1, 2, 1, 1, true, gen))),
      conv2(register_module("conv2", std::make_shared<nn::Conv2d>(32, 64, 5, 1, 2, 1, 1, true, gen))),
      fc1(register_module("fc1", std::make_shared<nn::Linear>(3136, 128, true, gen))),
      fc2(register_module("fc2", std::make_shared<nn::Linear>(128, 10, true, gen))) {}

Tensor CNN::forward(const Tensor& input) {
  SYNCGRAD_CHECK(input.dim() == 4 && input.size(1) == 1 && input.size(2) == 28 && input.size(3) == 28, ShapeError,
                 "CNN.forward: expected input of shape [N, 1, 28, 28], got ", shape_str(input.sizes()));
  Tensor x = max_pool2d(relu(conv1->forward(input)), 2);  // (N, 32, 14, 14)
  x = max_pool2d(relu(conv2->forward(x)), 2);             // (N, 64, 7, 7)
  x = relu(fc1->forward(flatten(x, 1)));                  // (N, 128)
  return fc2->forward(x);                                 // (N, 10)
}

}  // namespace syncgrad::models
