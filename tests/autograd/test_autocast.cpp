// Autocast: the dtype each op runs in inside the scope (bf16 and f16), nesting and thread-locality, the
// per-scope cache of parameter casts (reuse, invalidation by in-place updates and by grad mode), and
// gradients flowing back through the casts to float32 parameters.
#include <doctest/doctest.h>

#include <cmath>
#include <thread>

#include "autograd/node.h"
#include "syncgrad.h"

using namespace syncgrad;

namespace {

Tensor param(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  Tensor t = randn(shape, {}, &gen);
  t.requires_grad_(true);
  return t;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return max(abs(sub(a.to(DType::f64), b.to(DType::f64)))).item<double>();
}

// ||a - b|| / ||b|| (Frobenius norms): a few percent for bfloat16 rounding (ReLU masks flip where a
// pre-activation is near 0), about 1 for a wrong or missing gradient.
double relative_error(const Tensor& a, const Tensor& b) {
  Tensor d = sub(a.to(DType::f64), b.to(DType::f64));
  Tensor b64 = b.to(DType::f64);
  return std::sqrt(sum(mul(d, d)).item<double>() / sum(mul(b64, b64)).item<double>());
}

}  // namespace

TEST_CASE("autocast: matrix products and convolutions run in the scope's dtype") {
  for (DType low : {DType::bf16, DType::f16}) {
    CAPTURE(dtype_name(low));
    Tensor a = randn({4, 8}), b = randn({8, 3}), w = randn({5, 8}), bias = randn({5});
    Tensor batch_a = randn({2, 4, 8}), batch_b = randn({2, 8, 3});
    Tensor image = randn({2, 3, 6, 6}), kernel = randn({4, 3, 3, 3}), kernel_bias = randn({4});
    auto amp = autocast(DeviceType::kCPU, low);
    CHECK(is_autocast_enabled(DeviceType::kCPU));
    CHECK(autocast_dtype(DeviceType::kCPU) == low);
    CHECK(mm(a, b).dtype() == low);
    CHECK(matmul(a, b).dtype() == low);
    CHECK(bmm(batch_a, batch_b).dtype() == low);
    CHECK(addmm(randn({4, 3}), a, b).dtype() == low);
    CHECK(linear(a, w, bias).dtype() == low);
    CHECK(linear(a, w).dtype() == low);
    CHECK(conv2d(image, kernel, kernel_bias, 1, 1).dtype() == low);
    // The result is the float32 product rounded through the lower precision.
    CHECK(max_abs_diff(mm(a, b), raw::mm(a, b)) < 0.1);
  }
}

TEST_CASE("autocast: softmax, losses, layer norm, exp/log and sum/mean run in float32") {
  Tensor logits = randn({4, 5}).to(DType::bf16);
  Tensor target = randint(0, 5, {4}, {.dtype = DType::i64});
  Tensor positive = add(abs(logits), 1.0);
  auto amp = autocast(DeviceType::kCPU, DType::bf16);
  CHECK(softmax(logits, 1).dtype() == DType::f32);
  CHECK(log_softmax(logits, 1).dtype() == DType::f32);
  CHECK(softmax(logits, 1, DType::f64).dtype() == DType::f64);  // an explicit dtype wins
  CHECK(cross_entropy(logits, target).dtype() == DType::f32);
  CHECK(nll_loss(log_softmax(logits, 1), target).dtype() == DType::f32);
  CHECK(mse_loss(logits, zeros({4, 5}).to(DType::bf16)).dtype() == DType::f32);
  CHECK(layer_norm(logits, {5}).dtype() == DType::f32);
  CHECK(exp(logits).dtype() == DType::f32);
  CHECK(log(positive).dtype() == DType::f32);
  CHECK(sum(logits).dtype() == DType::f32);
  CHECK(mean(logits, {1}).dtype() == DType::f32);
}

TEST_CASE("autocast: other ops keep their inputs' dtype; float64 and integers are left alone") {
  Tensor half_input = randn({2, 4, 6, 6}).to(DType::bf16);
  Tensor a64 = randn({3, 3}, {.dtype = DType::f64});
  Tensor ints = randint(0, 5, {3, 3}, {.dtype = DType::i64});
  auto amp = autocast(DeviceType::kCPU, DType::bf16);
  CHECK(relu(half_input).dtype() == DType::bf16);
  CHECK(max_pool2d(half_input, 2).dtype() == DType::bf16);
  CHECK(add(half_input, half_input).dtype() == DType::bf16);
  CHECK(relu(randn({3})).dtype() == DType::f32);
  CHECK(mm(a64, a64).dtype() == DType::f64);
  CHECK_THROWS_AS(mm(a64, randn({3, 3})), DTypeError);  // float64 present: nothing is cast
  CHECK(mm(ints, ints).dtype() == DType::i64);
  CHECK(sum(ints).dtype() == DType::i64);
}

TEST_CASE("autocast: scopes nest, restore the previous state and are per thread") {
  Tensor a = randn({2, 2});
  CHECK_FALSE(is_autocast_enabled(DeviceType::kCPU));
  CHECK(mm(a, a).dtype() == DType::f32);
  {
    auto outer = autocast(DeviceType::kCPU, DType::bf16);
    {
      auto inner = autocast(DeviceType::kCPU, DType::f16);
      CHECK(mm(a, a).dtype() == DType::f16);
      {
        auto off = autocast(DeviceType::kCPU, DType::bf16, false);
        CHECK(mm(a, a).dtype() == DType::f32);
      }
      CHECK(mm(a, a).dtype() == DType::f16);
    }
    CHECK(mm(a, a).dtype() == DType::bf16);
    CHECK_FALSE(is_autocast_enabled(DeviceType::kCUDA));
    DType other_thread = DType::boolean;
    std::thread([&] { other_thread = mm(a, a).dtype(); }).join();
    CHECK(other_thread == DType::f32);
  }
  CHECK_FALSE(is_autocast_enabled(DeviceType::kCPU));
  CHECK(mm(a, a).dtype() == DType::f32);
}

TEST_CASE("autocast: a float32 or float64 dtype is refused") {
  CHECK_THROWS_AS(AutocastGuard(DeviceType::kCPU, DType::f32), ValueError);
  CHECK_THROWS_AS(AutocastGuard(DeviceType::kCPU, DType::f64), ValueError);
  CHECK_FALSE(is_autocast_enabled(DeviceType::kCPU));
}

TEST_CASE("autocast: a parameter is cast once per scope; the cache empties when the outermost scope ends") {
  Tensor w = param({3, 4}, 1);
  Tensor x = randn({2, 4});
  {
    auto amp = autocast(DeviceType::kCPU, DType::bf16);
    Tensor y1 = linear(x, w);
    Tensor y2 = linear(x, w);
    CHECK(autocast_cache_size() == 1);
    // The same cast feeds both products: one ToDTypeBackward node behind both.
    REQUIRE(y1.grad_fn() != nullptr);
    CHECK(y1.grad_fn()->next_edges[1].node == y2.grad_fn()->next_edges[1].node);
    linear(x.to(DType::f16), w);  // inputs that are not parameters are never cached
    CHECK(autocast_cache_size() == 1);
    {
      auto nested = autocast(DeviceType::kCPU, DType::f16);
      linear(x, w);
      CHECK(autocast_cache_size() == 2);  // one entry per (parameter, dtype)
    }
    CHECK(autocast_cache_size() == 2);
  }
  CHECK(autocast_cache_size() == 0);
}

TEST_CASE("autocast: an in-place update of a parameter inside the scope makes a new cast") {
  Tensor w = param({3, 4}, 2);
  Tensor x = randn({2, 4});
  auto amp = autocast(DeviceType::kCPU, DType::bf16);
  Tensor before = linear(x, w);
  {
    NoGradGuard no_grad;
    mul_(w, 2.0);
  }
  Tensor after = linear(x, w);
  CHECK(max_abs_diff(after, mul(before, 2.0)) < 0.05 * max(abs(after.to(DType::f32))).item<double>());
}

TEST_CASE("autocast: a cast made under NoGradGuard is not reused where gradients are recorded") {
  Tensor w = param({3, 4}, 3);
  Tensor x = randn({2, 4});
  auto amp = autocast(DeviceType::kCPU, DType::bf16);
  {
    NoGradGuard no_grad;
    CHECK(linear(x, w).grad_fn() == nullptr);
  }
  sum(linear(x, w)).backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().dtype() == DType::f32);
}

TEST_CASE("autocast: gradients reach the float32 parameters in float32 and match float32 training") {
  Generator gen(5);
  auto model = models::make_model("mlp", &gen);
  Generator gen_again(5);
  auto reference = models::make_model("mlp", &gen_again);
  Tensor x = randn({16, 784}), y = randint(0, 10, {16}, {.dtype = DType::i64});
  Tensor loss;
  {
    auto amp = autocast(DeviceType::kCPU, DType::bf16);
    Tensor logits = model->forward(x);
    CHECK(logits.dtype() == DType::bf16);
    loss = cross_entropy(logits, y);
  }
  CHECK(loss.dtype() == DType::f32);
  loss.backward();
  cross_entropy(reference->forward(x), y).backward();
  auto params = model->named_parameters(), ref_params = reference->named_parameters();
  REQUIRE(params.size() == ref_params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    CAPTURE(params[i].first);
    const Tensor& p = params[i].second;
    CHECK(p.dtype() == DType::f32);
    REQUIRE(p.grad().defined());
    CHECK(p.grad().dtype() == DType::f32);
    CHECK(relative_error(p.grad(), ref_params[i].second.grad()) < 0.1);
  }
}

TEST_CASE("autocast: conv2d gradients reach float32 weights; input gradients come back in the input's dtype") {
  Tensor input = param({2, 3, 8, 8}, 6);
  Tensor weight = param({4, 3, 3, 3}, 7);
  Tensor bias = param({4}, 8);
  Tensor out;
  {
    auto amp = autocast(DeviceType::kCPU, DType::bf16);
    out = conv2d(input, weight, bias, 1, 1);
  }
  CHECK(out.dtype() == DType::bf16);
  sum(out.to(DType::f32)).backward();
  for (const Tensor* t : {&input, &weight, &bias}) {
    REQUIRE(t->grad().defined());
    CHECK(t->grad().dtype() == DType::f32);
  }
  Tensor input_ref = input.detach().requires_grad_(true);
  Tensor weight_ref = weight.detach().requires_grad_(true);
  Tensor bias_ref = bias.detach().requires_grad_(true);
  sum(conv2d(input_ref, weight_ref, bias_ref, 1, 1)).backward();
  CHECK(relative_error(weight.grad(), weight_ref.grad()) < 0.02);
  CHECK(relative_error(input.grad(), input_ref.grad()) < 0.02);
  CHECK(relative_error(bias.grad(), bias_ref.grad()) < 0.02);
}

TEST_CASE("autocast: batch norm on the CPU normalises a bfloat16 input as it is (float32 parameters, statistics)") {
  Generator gen(7);
  const Tensor x32 = randn({4, 3, 5, 5}, {}, &gen);
  Tensor x = x32.to(DType::bf16), weight = add(randn({3}, {}, &gen), 1.0), bias = randn({3}, {}, &gen);
  Tensor residual = randn({4, 3, 5, 5}, {}, &gen);
  for (Tensor* t : {&x, &weight, &bias, &residual}) t->requires_grad_(true);
  Tensor running_mean = zeros({3}), running_var = ones({3});
  Tensor y, fused;
  {
    auto amp = autocast(DeviceType::kCPU, DType::bf16);
    y = batch_norm(x, running_mean, running_var, weight, bias, true);
    fused = batch_norm_relu(x, zeros({3}), ones({3}), weight, bias, true, 0.1, 1e-5, residual);
    CHECK(batch_norm(x32, zeros({3}), ones({3}), weight, bias, true).dtype() == DType::f32);  // float32 stays
  }
  CHECK(y.dtype() == DType::bf16);
  CHECK(fused.dtype() == DType::bf16);  // the float32 residual is added in bfloat16
  CHECK(running_mean.dtype() == DType::f32);
  // Against float32 batch norm of the same (bfloat16-representable) input: within bfloat16's rounding.
  const Tensor x_exact = x.detach().to(DType::f32);
  const Tensor want = batch_norm(x_exact, zeros({3}), ones({3}), weight.detach(), bias.detach(), true);
  const std::vector<float> got = to_vector<float>(y.to(DType::f32)), expected = to_vector<float>(want);
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - expected[i]) <= 1e-2f * (1 + std::abs(expected[i])));
  const Tensor mean_want = mean(x_exact, {0, 2, 3});
  const std::vector<float> rm = to_vector<float>(running_mean), rm_want = to_vector<float>(mean_want);
  for (size_t c = 0; c < 3; ++c) CHECK(rm[c] == doctest::Approx(0.1f * rm_want[c]).epsilon(1e-5));
  sum(add(y.to(DType::f32), fused.to(DType::f32))).backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == DType::bf16);
  CHECK(weight.grad().dtype() == DType::f32);
  CHECK(bias.grad().dtype() == DType::f32);
  CHECK(residual.grad().dtype() == DType::f32);
}
