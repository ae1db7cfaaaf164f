// gradcheck of nn::checkpoint's CheckpointBackward: two inputs, two outputs, the function recomputed in
// backward (with a nested checkpoint inside).
#include "autograd/ops/elementwise.h"
#include "nn/checkpoint.h"
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: checkpoint") {
  CHECK_GRADCHECK("checkpoint", [](const std::vector<Tensor>& in) {
    auto fn = [](const std::vector<Tensor>& x) {
      Tensor inner = nn::checkpoint([](const Tensor& t) { return tanh(t); }, mul(x[0], x[1]));
      return std::vector<Tensor>{inner, exp(x[0])};
    };
    std::vector<Tensor> out = nn::checkpoint(fn, in);
    return add(out[0], mul(out[1], 0.5));
  }, {leaf({2, 3}, 41), leaf({2, 3}, 42)});
}
