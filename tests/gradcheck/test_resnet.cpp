// gradcheck of whole tiny ResNets in float64 (train mode: batch statistics), with both shortcut kinds: the
// gradient of the input and of every parameter (convolutions, BatchNorm affine, fc).
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: tiny ResNets (two stages, zero-pad and projection shortcuts)") {
  for (models::Shortcut shortcut : {models::Shortcut::zero_pad, models::Shortcut::projection}) {
    Generator gen(7);
    models::ResNet model({{2, 4}, {1, 1}, shortcut, 3}, &gen);
    model.to(DType::f64);
    std::vector<Tensor> inputs{leaf({2, 3, 4, 4}, 8)};
    for (const Tensor& p : model.parameters()) inputs.push_back(p);
    INFO("shortcut " << (shortcut == models::Shortcut::zero_pad ? "zero_pad" : "projection"));
    CHECK_GRADCHECK("resnet", [&](const std::vector<Tensor>& in) { return model.forward(in[0]); }, inputs);
  }
}
