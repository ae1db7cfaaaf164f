// Losses (cross_entropy, nll_loss, mse_loss) and one_hot: values against PyTorch's documented formulas computed
// in double in the test (or by hand), reductions, ignore_index, label smoothing, dtypes and errors.
#include <doctest/doctest.h>

#include "tests/check_error.h"

#include <cmath>

#include "syncgrad.h"

using namespace syncgrad;
using syncgrad::testing::check_error;

namespace {

// Per-sample cross entropy of one row of logits, PyTorch's formula:
// (1 - s) * (-log p_t) + (s / C) * sum_c (-log p_c), with log p = x - logsumexp(x).
double row_loss(const std::vector<double>& x, int64_t t, double s) {
  double top = *std::max_element(x.begin(), x.end());
  double total = 0;
  for (double v : x) total += std::exp(v - top);
  double lse = top + std::log(total);
  double smooth = 0;
  for (double v : x) smooth += lse - v;
  return (1 - s) * (lse - x[t]) + s / static_cast<double>(x.size()) * smooth;
}

Tensor logits_4x3() {
  return from_vector(std::vector<double>{0.5, -1.0, 2.0, 1.5, 0.2, -0.3, -2.0, 0.0, 1.0, 0.3, 0.3, 0.9}, {4, 3});
}

std::vector<double> row(const std::vector<double>& v, int64_t i, int64_t c) {
  return std::vector<double>(v.begin() + i * c, v.begin() + (i + 1) * c);
}


}  // namespace

TEST_CASE("cross_entropy: mean, sum and none against the formula") {
  Tensor x = logits_4x3();
  Tensor t = tensor({2, 0, 1, 2});
  std::vector<double> v = to_vector<double>(x);
  std::vector<int64_t> tv = {2, 0, 1, 2};
  std::vector<double> per(4);
  double total = 0;
  for (int64_t i = 0; i < 4; ++i) total += per[i] = row_loss(row(v, i, 3), tv[i], 0);
  CHECK(cross_entropy(x, t).item<double>() == doctest::Approx(total / 4));
  CHECK(cross_entropy(x, t, {.reduction = Reduction::sum}).item<double>() == doctest::Approx(total));
  Tensor none = cross_entropy(x, t, {.reduction = Reduction::none});
  CHECK(none.sizes() == Shape{4});
  std::vector<double> got = to_vector<double>(none);
  for (int64_t i = 0; i < 4; ++i) CHECK(got[i] == doctest::Approx(per[i]));
  // By hand: logits (0, 0) give log 2 whatever the target.
  CHECK(cross_entropy(zeros({1, 2}), tensor({1})).item<float>() == doctest::Approx(std::log(2.0)));
}

TEST_CASE("cross_entropy: ignore_index drops targets from the sum and from the mean's count") {
  Tensor x = logits_4x3();
  std::vector<double> v = to_vector<double>(x);
  Tensor t = tensor({2, -100, 1, -100});
  double expected = (row_loss(row(v, 0, 3), 2, 0) + row_loss(row(v, 2, 3), 1, 0)) / 2;
  CHECK(cross_entropy(x, t).item<double>() == doctest::Approx(expected));
  std::vector<double> none = to_vector<double>(cross_entropy(x, t, {.reduction = Reduction::none}));
  CHECK(none[1] == 0.0);
  CHECK(none[3] == 0.0);
  // A custom ignore_index that is a valid class.
  Tensor t1 = tensor({2, 0, 1, 2});
  double expected1 = (row_loss(row(v, 1, 3), 0, 0) + row_loss(row(v, 2, 3), 1, 0)) / 2;
  CHECK(cross_entropy(x, t1, {.ignore_index = 2}).item<double>() == doctest::Approx(expected1));
  // Every target ignored: the mean is 0 / 0 = NaN (PyTorch), the sum is 0.
  Tensor all = tensor({-100, -100, -100, -100});
  CHECK(std::isnan(cross_entropy(x, all).item<double>()));
  CHECK(cross_entropy(x, all, {.reduction = Reduction::sum}).item<double>() == 0.0);
}

TEST_CASE("cross_entropy: label smoothing mixes with the uniform distribution") {
  // By hand: logits (1, 2, 3), target 0, s = 0.1: lse = log(e + e^2 + e^3) = 3.4076059644;
  // loss = lse - (0.9 * 1 + 0.1 / 3 * (1 + 2 + 3)) = lse - 1.1.
  Tensor x = tensor({1.0, 2.0, 3.0}).reshape({1, 3});
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  CHECK(lse == doctest::Approx(3.4076059644));
  CHECK(cross_entropy(x, tensor({0}), {.label_smoothing = 0.1}).item<double>() == doctest::Approx(lse - 1.1));
  // With ignore_index and mean: ignored rows add nothing, the mean counts the others only.
  Tensor l = logits_4x3();
  std::vector<double> v = to_vector<double>(l);
  Tensor t = tensor({1, -100, 0, 2});
  double expected = (row_loss(row(v, 0, 3), 1, 0.25) + row_loss(row(v, 2, 3), 0, 0.25) +
                     row_loss(row(v, 3, 3), 2, 0.25)) / 3;
  CHECK(cross_entropy(l, t, {.label_smoothing = 0.25}).item<double>() == doctest::Approx(expected));
  double summed = expected * 3;
  CHECK(cross_entropy(l, t, {.reduction = Reduction::sum, .label_smoothing = 0.25}).item<double>() ==
        doctest::Approx(summed));
}

TEST_CASE("cross_entropy: (N, C, d1) inputs, unbatched (C) input, non-contiguous logits") {
  Generator gen(3);
  Tensor x = randn({2, 3, 2}, {.dtype = DType::f64}, &gen);
  Tensor t = tensor({0, 2, 1, -100}).reshape({2, 2});
  std::vector<double> v = to_vector<double>(x);
  std::vector<int64_t> tv = {0, 2, 1, -100};
  double total = 0;
  int64_t count = 0;
  std::vector<double> per(4, 0.0);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t d = 0; d < 2; ++d) {
      if (tv[n * 2 + d] == -100) continue;
      std::vector<double> r;
      for (int64_t c = 0; c < 3; ++c) r.push_back(v[(n * 3 + c) * 2 + d]);
      per[n * 2 + d] = row_loss(r, tv[n * 2 + d], 0.1);
      total += per[n * 2 + d];
      ++count;
    }
  CHECK(cross_entropy(x, t, {.label_smoothing = 0.1}).item<double>() == doctest::Approx(total / count));
  Tensor none = cross_entropy(x, t, {.reduction = Reduction::none, .label_smoothing = 0.1});
  CHECK(none.sizes() == Shape{2, 2});
  std::vector<double> got = to_vector<double>(none);
  for (int64_t i = 0; i < 4; ++i) CHECK(got[i] == doctest::Approx(per[i]));

  Tensor single = tensor({0.5, -1.0, 2.0});
  CHECK(cross_entropy(single, tensor({2}).reshape({})).item<double>() ==
        doctest::Approx(row_loss({0.5, -1.0, 2.0}, 2, 0)));
  CHECK(cross_entropy(single, tensor({2}).reshape({}), {.reduction = Reduction::none}).dim() == 0);

  Tensor xt = logits_4x3().t().contiguous().t();  // same values, column-major strides
  CHECK_FALSE(xt.is_contiguous());
  CHECK(cross_entropy(xt, tensor({2, 0, 1, 2})).item<double>() ==
        doctest::Approx(cross_entropy(logits_4x3(), tensor({2, 0, 1, 2})).item<double>()));
}

TEST_CASE("cross_entropy: float32, float16 and bfloat16 logits") {
  Tensor x = logits_4x3();
  Tensor t = tensor({2, 0, 1, 2});
  double ref = cross_entropy(x, t).item<double>();
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    Tensor loss = cross_entropy(x.to(dtype), t, {.label_smoothing = 0.0});
    CHECK(loss.dtype() == dtype);
    CHECK(loss.item<float>() == doctest::Approx(ref).epsilon(dtype == DType::f32 ? 1e-6 : 1e-2));
  }
}

TEST_CASE("cross_entropy gradient is (softmax - one_hot) / N and zero on ignored rows") {
  Tensor x = logits_4x3();
  x.requires_grad_(true);
  cross_entropy(x, tensor({2, -100, 1, 0})).backward();
  std::vector<double> g = to_vector<double>(x.grad());
  std::vector<double> p = to_vector<double>(softmax(x.detach(), 1));
  std::vector<int64_t> tv = {2, -100, 1, 0};
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t c = 0; c < 3; ++c) {
      double expected = tv[i] == -100 ? 0.0 : (p[i * 3 + c] - (c == tv[i] ? 1.0 : 0.0)) / 3;
      CHECK(g[i * 3 + c] == doctest::Approx(expected));
    }
}

TEST_CASE("cross_entropy errors name the values, positions and shapes") {
  Tensor x = logits_4x3();
  check_error([&] { cross_entropy(x, tensor({0, 3, 1, 2})); }, {"cross_entropy", "target 3", "[1]", "3 classes"});
  CHECK_THROWS_AS(cross_entropy(x, tensor({0, 1, -1, 2})), IndexError);
  check_error([&] { cross_entropy(zeros({2, 3, 2}), tensor({0, 1, 2, 5}).reshape({2, 2})); },
                    {"target 5", "[1, 1]"});
  check_error([&] { cross_entropy(x, tensor({0, 1, 2})); }, {"cross_entropy", "[3]", "[4, 3]"});
  CHECK_THROWS_AS(cross_entropy(x, tensor({0, 1, 2})), ShapeError);
  check_error([&] { cross_entropy(x, tensor({0, 1, 2, 0}).to(DType::i32)); }, {"int32", "int64"});
  CHECK_THROWS_AS(cross_entropy(x, tensor({0, 1, 2, 0}).to(DType::i32)), DTypeError);
  CHECK_THROWS_AS(cross_entropy(arange(6).reshape({2, 3}), tensor({0, 1})), DTypeError);
  check_error([&] { cross_entropy(x, tensor({0, 1, 2, 0}), {.label_smoothing = 1.0}); }, {"label_smoothing"});
  CHECK_THROWS_AS(cross_entropy(x, tensor({0, 1, 2, 0}), {.label_smoothing = -0.1}), ValueError);
  CHECK_THROWS_AS(cross_entropy(zeros({2, 0}), tensor({0, 0})), ShapeError);
}

TEST_CASE("cross_entropy over many positions split over threads: the same bits, the first bad target named") {
  // (N, C, S) = (40, 300, 25): 1,000 positions of 300 classes each, several chunks on 2 or 3 threads; every
  // seventh target ignored.
  Tensor x = randn({40, 300, 25});
  Tensor target = randint(0, 300, {40, 25});
  raw::fill_(raw::slice(raw::view(target, {1000}), 0, 0, 1000, 7), -100);
  const int saved_threads = get_num_threads();
  std::vector<float> losses[3], means[3], grads[3];
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    Tensor logits = raw::clone(x).requires_grad_();
    Tensor loss = cross_entropy(logits, target, {.reduction = Reduction::none});
    loss.sum().backward();
    losses[threads - 1] = to_vector<float>(loss);
    grads[threads - 1] = to_vector<float>(logits.grad());
    means[threads - 1] = to_vector<float>(cross_entropy(x, target));  // divides by the valid targets' count
  }
  for (int i : {1, 2}) {
    CHECK(losses[0] == losses[i]);
    CHECK(grads[0] == grads[i]);
    CHECK(means[0] == means[i]);
  }
  // Bad targets in the first and in the last chunk: the earliest is reported, whichever thread scanned it.
  Tensor bad = raw::clone(target);
  raw::fill_(raw::select(raw::select(bad, 0, 39), 0, 24), 777);
  raw::fill_(raw::select(raw::select(bad, 0, 2), 0, 1), 555);
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    check_error([&] { cross_entropy(x, bad); }, {"target 555", "[2, 1]", "300 classes"});
  }
  set_num_threads(saved_threads);
}

TEST_CASE("nll_loss: picks -log_probs at the targets, ignore_index, reductions") {
  Tensor x = logits_4x3();
  Tensor lp = log_softmax(x, 1);
  std::vector<double> v = to_vector<double>(lp);
  Tensor t = tensor({2, -100, 1, 0});
  double expected = -(v[0 * 3 + 2] + v[2 * 3 + 1] + v[3 * 3 + 0]) / 3;
  CHECK(nll_loss(lp, t).item<double>() == doctest::Approx(expected));
  CHECK(nll_loss(lp, t, {.reduction = Reduction::sum}).item<double>() == doctest::Approx(expected * 3));
  std::vector<double> none = to_vector<double>(nll_loss(lp, t, {.reduction = Reduction::none}));
  CHECK(none == std::vector<double>{-v[2], 0.0, -v[7], -v[9]});
  CHECK(nll_loss(lp, t).item<double>() == doctest::Approx(cross_entropy(x, t).item<double>()));
  // By hand: -(-1.5) for the only target.
  CHECK(nll_loss(tensor({-0.5f, -1.5f}).reshape({1, 2}), tensor({1})).item<float>() == 1.5f);
  check_error([&] { nll_loss(lp, tensor({2, 7, 1, 0})); }, {"nll_loss", "target 7", "[1]"});
  check_error([&] { nll_loss(lp, tensor({2, 1})); }, {"nll_loss", "[2]", "[4, 3]"});
}

TEST_CASE("mse_loss: values, reductions, errors") {
  Tensor a = tensor({1.0, 2.0, 4.0});
  Tensor b = tensor({1.5, 0.0, 4.0});
  CHECK(mse_loss(a, b).item<double>() == doctest::Approx((0.25 + 4.0) / 3));
  CHECK(mse_loss(a, b, Reduction::sum).item<double>() == doctest::Approx(4.25));
  CHECK(to_vector<double>(mse_loss(a, b, Reduction::none)) == std::vector<double>{0.25, 4.0, 0.0});
  CHECK(mse_loss(a.to(DType::f32), b.to(DType::f32)).dtype() == DType::f32);
  CHECK(std::string(reduction_name(Reduction::none)) == "none");
  CHECK(std::string(reduction_name(Reduction::sum)) == "sum");
  check_error([&] { mse_loss(a, tensor({1.0, 2.0})); }, {"mse_loss", "[3]", "[2]"});
  CHECK_THROWS_AS(mse_loss(a, tensor({1.0, 2.0})), ShapeError);
  CHECK_THROWS_AS(mse_loss(arange(3), arange(3)), DTypeError);
}

TEST_CASE("one_hot: inferred and given num_classes, errors") {
  Tensor oh = one_hot(tensor({0, 2, 1}));
  CHECK(oh.dtype() == DType::i64);
  CHECK(oh.sizes() == Shape{3, 3});
  CHECK(to_vector<int64_t>(oh) == std::vector<int64_t>{1, 0, 0, 0, 0, 1, 0, 1, 0});
  Tensor oh2 = one_hot(tensor({1, 0, 3, 1}).reshape({2, 2}), 5);
  CHECK(oh2.sizes() == Shape{2, 2, 5});
  CHECK(to_vector<int64_t>(oh2.select(1, 0).select(0, 1)) == std::vector<int64_t>{0, 0, 0, 1, 0});
  CHECK(one_hot(zeros({0}, {.dtype = DType::i64}), 4).sizes() == Shape{0, 4});
  check_error([] { one_hot(tensor({0, 4, 1}), 3); }, {"one_hot", "index 4", "[1]", "num_classes 3"});
  CHECK_THROWS_AS(one_hot(tensor({0, -1}), 3), IndexError);
  CHECK_THROWS_AS(one_hot(tensor({0, -1})), IndexError);
  check_error([] { one_hot(zeros({0}, {.dtype = DType::i64})); }, {"one_hot", "empty"});
  check_error([] { one_hot(tensor({0, 1}).to(DType::i32)); }, {"one_hot", "int32"});
  CHECK_THROWS_AS(one_hot(tensor({0, 1}), -2), ValueError);
}
