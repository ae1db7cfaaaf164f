// gradcheck of every elementwise backward node: binary arithmetic with broadcasting and numbers, pow,
// maximum/minimum, clamp, where, the unary ops, and the in-place forms (applied to a non-leaf copy).
#include <span>

#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

namespace {

using Inputs = std::vector<Tensor>;

// A float64 leaf with values in [0.5, 1.5 + |N(0,1)|): away from 0 for log, sqrt, rsqrt, pow.
Tensor positive_leaf(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  Tensor t = raw::add(raw::abs(randn(shape, {.dtype = DType::f64}, &gen)), 0.5);
  t.requires_grad_(true);
  return t;
}

}  // namespace

TEST_CASE("gradcheck: add and sub with broadcasting, alpha and numbers") {
  Tensor a = leaf({2, 3}, 1), b = leaf({3}, 2), c = leaf({2, 1}, 3);
  CHECK_GRADCHECK("add broadcast", [](const Inputs& in) { return add(in[0], in[1]); }, {a, b});
  CHECK_GRADCHECK("add alpha", [](const Inputs& in) { return add(in[0], in[2], 2.5); }, {a, b, c});
  CHECK_GRADCHECK("sub broadcast both ways", [](const Inputs& in) { return in[1] - in[2]; }, {a, b, c});
  CHECK_GRADCHECK("sub alpha", [](const Inputs& in) { return sub(in[0], in[1], -3); }, {a, b});
  CHECK_GRADCHECK("tensor + number, number - tensor",
                  [](const Inputs& in) { return (in[0] + 2) * (1.5 - in[0]); }, {a});
}

TEST_CASE("gradcheck: mul and div") {
  Tensor a = leaf({2, 3}, 4), b = leaf({2, 1}, 5);
  Tensor p = positive_leaf({3}, 6);
  CHECK_GRADCHECK("mul broadcast", [](const Inputs& in) { return in[0] * in[1]; }, {a, b});
  CHECK_GRADCHECK("mul by number", [](const Inputs& in) { return in[0] * 3.0; }, {a});
  CHECK_GRADCHECK("mul of a tensor by itself", [](const Inputs& in) { return in[0] * in[0]; }, {a});
  CHECK_GRADCHECK("div broadcast", [](const Inputs& in) { return in[0] / in[1]; }, {a, p});
  CHECK_GRADCHECK("div by number", [](const Inputs& in) { return in[0] / 4; }, {a});
  CHECK_GRADCHECK("number / tensor", [](const Inputs& in) { return 2.0 / in[0]; }, {p});
}

TEST_CASE("gradcheck: pow") {
  Tensor base = positive_leaf({2, 3}, 7), exponent = leaf({3}, 8);
  CHECK_GRADCHECK("tensor ^ tensor", [](const Inputs& in) { return pow(in[0], in[1]); }, {base, exponent});
  CHECK_GRADCHECK("tensor ^ number", [](const Inputs& in) { return pow(in[0], 2.5); }, {base});
  CHECK_GRADCHECK("tensor ^ integer", [](const Inputs& in) { return pow(in[1], 3); }, {base, exponent});
  CHECK_GRADCHECK("number ^ tensor", [](const Inputs& in) { return pow(1.7, in[0]); }, {exponent});
}

TEST_CASE("gradcheck: maximum and minimum (no ties)") {
  Tensor a = leaf({2, 3}, 9), b = leaf({3}, 10);
  CHECK_GRADCHECK("maximum", [](const Inputs& in) { return maximum(in[0], in[1]); }, {a, b});
  CHECK_GRADCHECK("minimum", [](const Inputs& in) { return minimum(in[0], in[1]); }, {a, b});
}

TEST_CASE("gradcheck: clamp with number and tensor bounds") {
  // Values near the bounds would sit on a kink: scale the input so none is within 1e-3 of +-0.5.
  Tensor x = leaf({4, 5}, 11);
  {
    NoGradGuard guard;
    for (double& v : std::span<double>(x.data_ptr<double>(), 20)) {
      if (std::abs(std::abs(v) - 0.5) < 1e-3) v += 0.01;
    }
  }
  CHECK_GRADCHECK("clamp(min, max)", [](const Inputs& in) { return clamp(in[0], -0.5, 0.5); }, {x});
  CHECK_GRADCHECK("clamp(min)", [](const Inputs& in) { return clamp(in[0], Scalar(-0.5)); }, {x});
  CHECK_GRADCHECK("clamp(max)", [](const Inputs& in) { return clamp(in[0], std::nullopt, Scalar(0.5)); }, {x});
  Tensor lo = leaf({5}, 12, 0.1), hi = leaf({4, 1}, 13, 0.1);
  {
    NoGradGuard guard;
    add_(lo, -1.0);
    add_(hi, 1.0);
  }
  CHECK_GRADCHECK("clamp(tensor min, tensor max)",
                  [](const Inputs& in) { return clamp(in[0], in[1], in[2]); }, {x, lo, hi});
  CHECK_GRADCHECK("clamp(tensor min)", [](const Inputs& in) { return clamp(in[0], in[1], Tensor()); }, {x, lo});
  CHECK_GRADCHECK("clamp with crossed bounds (min > max)",
                  [](const Inputs& in) { return clamp(in[0], in[2], in[1]); }, {x, lo, hi});
}

TEST_CASE("gradcheck: where") {
  Tensor a = leaf({2, 3}, 14), b = leaf({3}, 15);
  Tensor cond = tensor({1.f, -1.f, 2.f}) > 0;
  CHECK_GRADCHECK("where broadcast", [cond](const Inputs& in) { return where(cond, in[0], in[1]); }, {a, b});
  CHECK_GRADCHECK("where with a number", [cond](const Inputs& in) { return where(cond, in[0], 0.5); }, {a});
}

TEST_CASE("gradcheck: unary ops") {
  Tensor x = leaf({3, 4}, 16);
  Tensor p = positive_leaf({3, 4}, 17);
  CHECK_GRADCHECK("neg", [](const Inputs& in) { return -in[0]; }, {x});
  CHECK_GRADCHECK("abs", [](const Inputs& in) { return abs(in[0]); }, {x});
  CHECK_GRADCHECK("relu", [](const Inputs& in) { return relu(in[0]); }, {x});
  CHECK_GRADCHECK("square", [](const Inputs& in) { return square(in[0]); }, {x});
  CHECK_GRADCHECK("sign", [](const Inputs& in) { return sign(in[0]); }, {x});
  CHECK_GRADCHECK("exp", [](const Inputs& in) { return exp(in[0]); }, {x});
  CHECK_GRADCHECK("log", [](const Inputs& in) { return log(in[0]); }, {p});
  CHECK_GRADCHECK("log1p", [](const Inputs& in) { return log1p(in[0]); }, {p});
  CHECK_GRADCHECK("sqrt", [](const Inputs& in) { return sqrt(in[0]); }, {p});
  CHECK_GRADCHECK("rsqrt", [](const Inputs& in) { return rsqrt(in[0]); }, {p});
  CHECK_GRADCHECK("sigmoid", [](const Inputs& in) { return sigmoid(in[0]); }, {x});
  CHECK_GRADCHECK("tanh", [](const Inputs& in) { return tanh(in[0]); }, {x});
  CHECK_GRADCHECK("gelu", [](const Inputs& in) { return gelu(in[0]); }, {x});
  CHECK_GRADCHECK("gelu tanh", [](const Inputs& in) { return gelu(in[0], GeluApproximate::tanh); }, {x});
  CHECK_GRADCHECK("unary on a transposed input", [](const Inputs& in) { return tanh(transpose(in[0], 0, 1)); }, {x});
}

TEST_CASE("gradcheck: in-place ops on a non-leaf") {
  Tensor a = leaf({2, 3}, 18), b = leaf({3}, 19);
  Tensor p = positive_leaf({3}, 20);
  CHECK_GRADCHECK("add_ tensor alpha", [](const Inputs& in) {
    Tensor y = in[0] * 1.0;
    add_(y, in[1], 2);
    return y;
  }, {a, b});
  CHECK_GRADCHECK("-= and += number", [](const Inputs& in) {
    Tensor y = in[0] * 2.0;
    y -= in[1];
    y += 3;
    return y;
  }, {a, b});
  CHECK_GRADCHECK("mul_ tensor and number", [](const Inputs& in) {
    Tensor y = in[0] + 0.0;
    y *= in[1];
    mul_(y, 1.5);
    return y;
  }, {a, b});
  CHECK_GRADCHECK("div_ tensor and number", [](const Inputs& in) {
    Tensor y = in[0] + 0.0;
    y /= in[1];
    div_(y, 4);
    return y;
  }, {a, p});
  CHECK_GRADCHECK("in-place into a tensor that needs no grad", [](const Inputs& in) {
    Tensor y = zeros({2, 3}, {.dtype = DType::f64});
    y += in[0];
    mul_(y, in[1]);
    return y;
  }, {a, b});
  CHECK_GRADCHECK("relu_ and clamp_", [](const Inputs& in) {
    Tensor y = in[0] * 1.0;
    relu_(y);
    Tensor z = in[0] * 1.0;
    clamp_(z, -0.5, 0.5);
    return y + z;
  }, {a});
}
