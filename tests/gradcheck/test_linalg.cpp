// gradcheck of the differentiable matrix products: mm, bmm, matmul (every rank combination, broadcast
// batches), addmm, linear (with and without bias) and linear_gelu.
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: mm, including transposed operands and a constant operand") {
  Tensor a = leaf({3, 4}, 1), b = leaf({4, 5}, 2);
  CHECK_GRADCHECK("mm", [](const std::vector<Tensor>& in) { return mm(in[0], in[1]); }, {a, b});
  CHECK_GRADCHECK("mm of transposes",
                  [](const std::vector<Tensor>& in) { return mm(transpose(in[1], 0, 1), transpose(in[0], 0, 1)); },
                  {a, b});
  Tensor constant = b.detach();
  CHECK_GRADCHECK("mm with a constant right operand",
                  [](const std::vector<Tensor>& in) { return mm(in[0], in[1]); }, {a, constant});
}

TEST_CASE("gradcheck: bmm") {
  Tensor a = leaf({2, 3, 4}, 3), b = leaf({2, 4, 2}, 4);
  CHECK_GRADCHECK("bmm", [](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, {a, b});
}

TEST_CASE("gradcheck: matmul over every rank combination") {
  auto product = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  CHECK_GRADCHECK("1-D @ 1-D", product, {leaf({4}, 5), leaf({4}, 6)});
  CHECK_GRADCHECK("1-D @ 2-D", product, {leaf({4}, 7), leaf({4, 3}, 8)});
  CHECK_GRADCHECK("2-D @ 1-D", product, {leaf({3, 4}, 9), leaf({4}, 10)});
  CHECK_GRADCHECK("2-D @ 2-D", product, {leaf({3, 4}, 11), leaf({4, 2}, 12)});
  CHECK_GRADCHECK("3-D @ 2-D (folded)", product, {leaf({2, 3, 4}, 13), leaf({4, 2}, 14)});
  CHECK_GRADCHECK("3-D @ 1-D", product, {leaf({2, 3, 4}, 15), leaf({4}, 16)});
  CHECK_GRADCHECK("1-D @ 3-D", product, {leaf({4}, 17), leaf({2, 4, 3}, 18)});
  CHECK_GRADCHECK("2-D @ 3-D (broadcast)", product, {leaf({3, 4}, 19), leaf({2, 4, 2}, 20)});
  CHECK_GRADCHECK("3-D @ 3-D", product, {leaf({2, 3, 4}, 21), leaf({2, 4, 2}, 22)});
  CHECK_GRADCHECK("broadcast batch dims", product, {leaf({2, 1, 3, 4}, 23), leaf({3, 4, 2}, 24)});
  CHECK_GRADCHECK("broadcast size-1 batch on the right", product, {leaf({3, 2, 4}, 25), leaf({1, 4, 2}, 26)});
}

TEST_CASE("gradcheck: addmm with broadcast biases and scales") {
  Tensor a = leaf({3, 4}, 27), b = leaf({4, 2}, 28);
  auto with = [](Scalar beta, Scalar alpha) {
    return [beta, alpha](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], beta, alpha); };
  };
  CHECK_GRADCHECK("addmm, bias (N)", with(1, 1), {leaf({2}, 29), a, b});
  CHECK_GRADCHECK("addmm, bias (M, N), beta and alpha", with(0.5, -1.5), {leaf({3, 2}, 30), a, b});
  CHECK_GRADCHECK("addmm, bias (M, 1)", with(2, 1), {leaf({3, 1}, 31), a, b});
}

TEST_CASE("gradcheck: linear with and without bias, over leading dimensions") {
  Tensor weight = leaf({3, 4}, 32), bias = leaf({3}, 33);
  auto with_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  auto without_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1]); };
  CHECK_GRADCHECK("linear (N, in) with bias", with_bias, {leaf({5, 4}, 34), weight, bias});
  CHECK_GRADCHECK("linear (N, in) without bias", without_bias, {leaf({5, 4}, 35), weight});
  CHECK_GRADCHECK("linear (B, T, in) with bias", with_bias, {leaf({2, 3, 4}, 36), weight, bias});
  CHECK_GRADCHECK("linear (in) without bias", without_bias, {leaf({4}, 37), weight});
  CHECK_GRADCHECK("linear with a constant input", with_bias, {leaf({5, 4}, 38).detach(), weight, bias});
}

TEST_CASE("gradcheck: linear_gelu in both approximations, with and without bias, a frozen weight") {
  Tensor weight = leaf({3, 4}, 40), bias = leaf({3}, 41);
  for (GeluApproximate approximate : {GeluApproximate::tanh, GeluApproximate::none}) {
    auto with_bias = [=](const std::vector<Tensor>& in) { return linear_gelu(in[0], in[1], in[2], approximate); };
    auto without_bias = [=](const std::vector<Tensor>& in) { return linear_gelu(in[0], in[1], {}, approximate); };
    CHECK_GRADCHECK("linear_gelu (N, in) with bias", with_bias, {leaf({5, 4}, 42), weight, bias});
    CHECK_GRADCHECK("linear_gelu (B, T, in) without bias", without_bias, {leaf({2, 3, 4}, 43), weight});
    CHECK_GRADCHECK("linear_gelu with a frozen weight", with_bias, {leaf({5, 4}, 44), weight.detach(), bias});
    CHECK_GRADCHECK("linear_gelu with a constant input", with_bias, {leaf({5, 4}, 45).detach(), weight, bias});
  }
}
