// gradcheck of the differentiable view and copy ops.
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: view, reshape, squeeze, unsqueeze, flatten") {
  Tensor x = leaf({2, 3, 1});
  CHECK_GRADCHECK("view", [](const std::vector<Tensor>& in) { return view(in[0], {3, 2}); }, {x});
  CHECK_GRADCHECK("reshape of a transposed tensor",
                  [](const std::vector<Tensor>& in) { return reshape(transpose(in[0], 0, 1), {6}); }, {x});
  CHECK_GRADCHECK("squeeze/unsqueeze", [](const std::vector<Tensor>& in) { return unsqueeze(squeeze(in[0]), 1); }, {x});
  CHECK_GRADCHECK("flatten", [](const std::vector<Tensor>& in) { return flatten(in[0]); }, {x});
}

TEST_CASE("gradcheck: permute and transpose") {
  Tensor x = leaf({2, 3, 4});
  CHECK_GRADCHECK("permute", [](const std::vector<Tensor>& in) { return permute(in[0], {2, 0, 1}); }, {x});
  CHECK_GRADCHECK("transpose", [](const std::vector<Tensor>& in) { return transpose(in[0], -1, 0); }, {x});
}

TEST_CASE("gradcheck: narrow, slice, select") {
  Tensor x = leaf({4, 5});
  CHECK_GRADCHECK("narrow", [](const std::vector<Tensor>& in) { return narrow(in[0], 1, 1, 3); }, {x});
  CHECK_GRADCHECK("slice with step", [](const std::vector<Tensor>& in) { return slice(in[0], 0, 1, 4, 2); }, {x});
  CHECK_GRADCHECK("select", [](const std::vector<Tensor>& in) { return select(in[0], 1, -2); }, {x});
}

TEST_CASE("gradcheck: expand sums the gradient back") {
  Tensor x = leaf({3, 1});
  CHECK_GRADCHECK("expand", [](const std::vector<Tensor>& in) { return expand(in[0], {2, 3, 4}); }, {x});
}

TEST_CASE("gradcheck: clone, contiguous, dtype round trip") {
  Tensor x = leaf({2, 3});
  CHECK_GRADCHECK("clone", [](const std::vector<Tensor>& in) { return clone(in[0]); }, {x});
  CHECK_GRADCHECK("contiguous of transpose",
                  [](const std::vector<Tensor>& in) { return contiguous(transpose(in[0], 0, 1)); }, {x});
  // Through float32 and back: the finite differences need a loose tolerance.
  autograd::GradcheckOptions loose{.eps = 1e-3, .atol = 1e-3, .rtol = 1e-2};
  auto result = autograd::gradcheck(
      "to(f32)", [](const std::vector<Tensor>& in) { return to(to(in[0], DType::f32), DType::f64); }, {x}, loose);
  CHECK_MESSAGE(result.ok, result.message);
}
