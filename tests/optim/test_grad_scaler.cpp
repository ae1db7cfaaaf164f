// GradScaler: PyTorch's defaults, scale(), unscale_ (one pass that also finds inf/NaN), skipped steps with
// injected inf/NaN (weights and optimizer state untouched, backoff), growth after the interval, the call-order
// errors, float16 gradients refused, state_dict round trip, and the disabled scaler.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "syncgrad.h"

using namespace syncgrad;
using optim::GradScaler;

namespace {

// A parameter of `n` elements with a gradient of `grad_value` everywhere.
Tensor param_with_grad(int64_t n, float value, float grad_value) {
  Tensor p = full({n}, value);
  p.requires_grad_(true);
  p.set_grad(full({n}, grad_value));
  return p;
}

void put(const Tensor& t, int64_t index, float value) {
  NoGradGuard no_grad;
  raw::fill_(t.narrow(0, index, 1), value);
}

std::vector<float> values(const Tensor& t) { return to_vector<float>(t); }

}  // namespace

TEST_CASE("GradScaler: PyTorch's defaults; scale() multiplies the loss") {
  GradScaler scaler;
  CHECK(scaler.is_enabled());
  CHECK(scaler.get_scale() == 65536.0);
  CHECK(scaler.growth_tracker() == 0);
  auto state = scaler.state_dict();
  CHECK(state.at("growth_factor") == 2.0);
  CHECK(state.at("backoff_factor") == 0.5);
  CHECK(state.at("growth_interval") == 2000.0);
  Tensor loss = full({}, 0.5f);
  CHECK(scaler.scale(loss).item<float>() == 32768.0f);
  CHECK(scaler.scale(loss).dtype() == DType::f32);
  Tensor half_loss = full({}, 2.0f, {.dtype = DType::f16});
  CHECK(scaler.scale(half_loss).item<float>() == 131072.0f);  // beyond float16's range: scaled in float32
}

TEST_CASE("GradScaler: a clean step unscales the gradients and steps like plain SGD on the true gradients") {
  Tensor p = param_with_grad(5, 1.0f, 4.0f * 65536.0f);
  Tensor q = param_with_grad(5, 1.0f, 4.0f);
  optim::SGD opt({p}, {.lr = 0.1, .momentum = 0.9});
  optim::SGD reference({q}, {.lr = 0.1, .momentum = 0.9});
  GradScaler scaler;
  CHECK(scaler.step(opt));
  scaler.update();
  reference.step();
  CHECK(values(p.grad()) == values(q.grad()));
  CHECK(values(p) == values(q));
  CHECK(scaler.get_scale() == 65536.0);
  CHECK(scaler.growth_tracker() == 1);
  CHECK(scaler.skipped_steps() == 0);
}

TEST_CASE("GradScaler: an inf or NaN gradient skips the step, leaves weights and optimizer state untouched, "
          "and halves the scale") {
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    CAPTURE(bad);
    Tensor p = param_with_grad(3, 1.0f, 65536.0f);
    Tensor big = param_with_grad(200000, 2.0f, 65536.0f);  // spans several blocks of the unscale kernel
    optim::SGD opt({p, big}, {.lr = 0.1, .momentum = 0.9});
    GradScaler scaler({.growth_interval = 3});
    // One clean step first, so momentum buffers exist.
    CHECK(scaler.step(opt));
    scaler.update();
    const auto p_before = values(p), big_before = values(big);
    const auto momentum_before = values(opt.state_dict().tensors.at(0).second);
    p.set_grad(full({3}, 65536.0f));
    big.set_grad(full({200000}, 65536.0f));
    put(big.grad(), 150001, bad);
    CHECK_FALSE(scaler.step(opt));
    CHECK(values(p) == p_before);
    CHECK(values(big) == big_before);
    CHECK(values(opt.state_dict().tensors.at(0).second) == momentum_before);
    CHECK(scaler.skipped_steps() == 1);
    scaler.update();
    CHECK(scaler.get_scale() == 32768.0);
    CHECK(scaler.growth_tracker() == 0);
  }
}

TEST_CASE("GradScaler: the scale grows by growth_factor after growth_interval clean steps in a row") {
  Tensor p = param_with_grad(2, 0.0f, 1.0f);
  optim::SGD opt({p}, {.lr = 0.0});
  GradScaler scaler({.init_scale = 8.0, .growth_interval = 3});
  for (int i = 0; i < 2; ++i) {
    scaler.step(opt);
    scaler.update();
    CHECK(scaler.get_scale() == 8.0);
  }
  // An inf step resets the run of clean steps.
  put(p.grad(), 0, std::numeric_limits<float>::infinity());
  scaler.step(opt);
  scaler.update();
  CHECK(scaler.get_scale() == 4.0);
  for (int i = 0; i < 3; ++i) {
    p.set_grad(ones({2}));
    CHECK(scaler.step(opt));
    scaler.update();
  }
  CHECK(scaler.get_scale() == 8.0);
  CHECK(scaler.growth_tracker() == 0);
}

TEST_CASE("GradScaler: unscale_ before clipping; step does not unscale again") {
  Tensor p = param_with_grad(4, 0.0f, 3.0f * 1024.0f);
  optim::SGD opt({p}, {.lr = 1.0});
  GradScaler scaler({.init_scale = 1024.0});
  scaler.unscale_(opt);
  CHECK(values(p.grad()) == std::vector<float>(4, 3.0f));
  optim::clip_grad_norm_({p}, 1.0);
  scaler.step(opt);
  scaler.update();
  CHECK(std::abs(std::sqrt(4.0) * -values(p)[0] - 1.0) < 1e-5);
}

TEST_CASE("GradScaler: call-order errors, float16 gradients and bad options are refused") {
  Tensor p = param_with_grad(2, 0.0f, 1.0f);
  optim::SGD opt({p}, {.lr = 0.1});
  GradScaler scaler;
  CHECK_THROWS_AS(scaler.update(), ValueError);  // nothing checked yet
  scaler.unscale_(opt);
  CHECK_THROWS_AS(scaler.unscale_(opt), ValueError);
  scaler.step(opt);
  CHECK_THROWS_AS(scaler.step(opt), ValueError);
  CHECK_THROWS_AS(scaler.unscale_(opt), ValueError);
  scaler.update();

  Tensor h = param_with_grad(2, 0.0f, 1.0f);
  h.set_grad(ones({2}, {.dtype = DType::f16}));
  optim::SGD half_opt({h}, {.lr = 0.1});
  try {
    scaler.step(half_opt);
    FAIL("expected DTypeError");
  } catch (const DTypeError& e) {
    CHECK(std::string(e.what()).find("float16 gradient") != std::string::npos);
  }
  CHECK_THROWS_AS(GradScaler({.init_scale = 0.0}), ValueError);
  CHECK_THROWS_AS(GradScaler({.growth_factor = 1.0}), ValueError);
  CHECK_THROWS_AS(GradScaler({.backoff_factor = 1.5}), ValueError);
  CHECK_THROWS_AS(GradScaler({.growth_interval = 0}), ValueError);
}

TEST_CASE("GradScaler: state_dict round trip, missing keys named") {
  Tensor p = param_with_grad(2, 0.0f, 1.0f);
  optim::SGD opt({p}, {.lr = 0.0});
  GradScaler scaler({.init_scale = 256.0, .growth_interval = 10});
  put(p.grad(), 1, std::numeric_limits<float>::quiet_NaN());
  scaler.step(opt);
  scaler.update();
  p.set_grad(ones({2}));
  scaler.step(opt);
  scaler.update();
  auto state = scaler.state_dict();
  GradScaler restored;
  restored.load_state_dict(state);
  CHECK(restored.get_scale() == 128.0);
  CHECK(restored.growth_tracker() == 1);
  CHECK(restored.skipped_steps() == 1);
  CHECK(restored.state_dict() == state);
  state.erase("_growth_tracker");
  try {
    restored.load_state_dict(state);
    FAIL("expected ValueError");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("_growth_tracker") != std::string::npos);
  }
  CHECK_THROWS_AS(restored.load_state_dict({}), ValueError);
}

TEST_CASE("GradScaler: disabled, it passes the loss through and always steps") {
  Tensor p = param_with_grad(2, 1.0f, std::numeric_limits<float>::infinity());
  optim::SGD opt({p}, {.lr = 0.1});
  GradScaler scaler({.enabled = false});
  Tensor loss = full({}, 2.0f);
  CHECK(scaler.scale(loss).is_same(loss));
  CHECK(scaler.step(opt));
  scaler.update();
  CHECK(scaler.state_dict().empty());
  CHECK(std::isinf(values(p)[0]));
}

TEST_CASE("unscale_grads_: scales in one pass, reports inf/NaN, handles non-contiguous gradients") {
  Tensor a = full({4, 3}, 8.0f);
  Tensor b = full({3, 4}, 8.0f).transpose(0, 1);  // non-contiguous view
  CHECK_FALSE(raw::unscale_grads_({a, b}, 0.25));
  CHECK(values(a) == std::vector<float>(12, 2.0f));
  CHECK(values(b.contiguous()) == std::vector<float>(12, 2.0f));
  Tensor c = full({5}, 1.0f, {.dtype = DType::bf16});
  put(c, 2, std::numeric_limits<float>::infinity());
  CHECK(raw::unscale_grads_({a, c}, 0.5));
  CHECK(values(c.to(DType::f32))[0] == 0.5f);
  CHECK_THROWS_AS(raw::unscale_grads_({randint(0, 2, {3}, {.dtype = DType::i64})}, 1.0), DTypeError);
}
