// Adam and AdamW: three steps on the quadratic problem against PyTorch's algorithms in double (L2 vs
// decoupled weight decay, amsgrad, maximize), float32 and float64, the state they keep, and option checks.
#include <doctest/doctest.h>

#include "optim/adam.h"
#include "optim_reference.h"

using namespace syncgrad;
using namespace optim_test;

namespace {

AdamReference reference_of(const optim::AdamOptions& o, bool decoupled) {
  AdamReference r;
  r.lr = o.lr;
  r.beta1 = o.beta1;
  r.beta2 = o.beta2;
  r.eps = o.eps;
  r.weight_decay = o.weight_decay;
  r.amsgrad = o.amsgrad;
  r.maximize = o.maximize;
  r.decoupled = decoupled;
  return r;
}

void check_adam(const optim::AdamOptions& options, DType dtype, double tol) {
  std::vector<Tensor> params = make_params(dtype);
  optim::Adam opt(params, options);
  check_steps(opt, params, std::vector<AdamReference>(params.size(), reference_of(options, false)), tol);
}

void check_adamw(const optim::AdamWOptions& o, DType dtype, double tol) {
  std::vector<Tensor> params = make_params(dtype);
  optim::AdamW opt(params, o);
  const optim::AdamOptions same{.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
                                .weight_decay = o.weight_decay, .amsgrad = o.amsgrad, .maximize = o.maximize};
  check_steps(opt, params, std::vector<AdamReference>(params.size(), reference_of(same, true)), tol);
}

}  // namespace

TEST_CASE("Adam matches PyTorch's algorithm for three steps") {
  SUBCASE("defaults with a large lr") { check_adam({.lr = 0.1}, DType::f64, 1e-12); }
  SUBCASE("L2 weight decay and betas") {
    check_adam({.lr = 0.05, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-3, .weight_decay = 0.3}, DType::f64, 1e-12);
  }
  SUBCASE("amsgrad") { check_adam({.lr = 0.2, .beta1 = 0.5, .beta2 = 0.6, .amsgrad = true}, DType::f64, 1e-12); }
  SUBCASE("maximize") { check_adam({.lr = 0.05, .weight_decay = 0.1, .maximize = true}, DType::f64, 1e-12); }
  SUBCASE("float32") { check_adam({.lr = 0.05, .amsgrad = true}, DType::f32, 1e-5); }
}

TEST_CASE("AdamW matches PyTorch's algorithm (decoupled weight decay) for three steps") {
  SUBCASE("default weight decay") { check_adamw({.lr = 0.1}, DType::f64, 1e-12); }
  SUBCASE("large weight decay, amsgrad") {
    check_adamw({.lr = 0.05, .beta2 = 0.7, .weight_decay = 0.5, .amsgrad = true}, DType::f64, 1e-12);
  }
  SUBCASE("maximize") { check_adamw({.lr = 0.05, .weight_decay = 0.2, .maximize = true}, DType::f64, 1e-12); }
  SUBCASE("float32") { check_adamw({.lr = 0.05}, DType::f32, 1e-5); }
}

TEST_CASE("AdamW defaults to weight_decay 0.01 and differs from Adam's L2 decay") {
  std::vector<Tensor> params = make_params();
  optim::AdamW adamw(params);
  CHECK(adamw.param_groups()[0].options.at("weight_decay") == 0.01);
  CHECK(adamw.lr() == 1e-3);
  std::vector<Tensor> a = make_params(), b = make_params();
  optim::Adam adam_l2(a, {.lr = 0.1, .weight_decay = 0.5});
  optim::AdamW adam_decoupled(b, {.lr = 0.1, .weight_decay = 0.5});
  quadratic_backward(a);
  quadratic_backward(b);
  adam_l2.step();
  adam_decoupled.step();
  CHECK(to_vector<double>(a[0]) != to_vector<double>(b[0]));
}

TEST_CASE("Adam keeps a per-parameter step count and moment buffers") {
  std::vector<Tensor> params = make_params();
  Tensor unused = from_vector(std::vector<double>{1.0}, {1});
  unused.requires_grad_(true);
  optim::Adam opt({params[0], unused, params[1]}, {.lr = 0.1, .amsgrad = true});
  quadratic_backward(params);
  opt.step();
  opt.zero_grad();
  // Only parameter 0 gets a second gradient.
  quadratic_backward({params[0]});
  opt.step();
  optim::OptimizerStateDict state = opt.state_dict();
  std::vector<std::string> keys;
  for (const auto& [key, value] : state.tensors) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"state.0.step", "state.0.exp_avg", "state.0.exp_avg_sq",
                                         "state.0.max_exp_avg_sq", "state.2.step", "state.2.exp_avg",
                                         "state.2.exp_avg_sq", "state.2.max_exp_avg_sq"});
  CHECK(state.tensors[0].second.item<double>() == 2.0);
  CHECK(state.tensors[0].second.dim() == 0);
  CHECK(state.tensors[4].second.item<double>() == 1.0);
  CHECK(to_vector<double>(unused) == std::vector<double>{1.0});
  // exp_avg after one step of parameter 2 is (1 - beta1) * grad.
  const std::vector<double> g = quadratic_grad(initial_values()[1]);
  std::vector<double> expected(g.size());
  for (size_t k = 0; k < g.size(); ++k) expected[k] = 0.1 * g[k];
  check_close(to_vector<double>(state.tensors[5].second), expected, 1e-12);
}

TEST_CASE("Adam and AdamW reject invalid options with ValueError naming the option and value") {
  std::vector<Tensor> params = make_params();
  std::string e = error_of<ValueError>([&] { optim::Adam(params, {.lr = -0.01}); });
  CHECK(contains(e, "Adam"));
  CHECK(contains(e, "lr"));
  CHECK(contains(e, "-0.01"));
  e = error_of<ValueError>([&] { optim::Adam(params, {.beta1 = 1.0}); });
  CHECK(contains(e, "beta1"));
  CHECK(contains(e, "[0, 1)"));
  e = error_of<ValueError>([&] { optim::Adam(params, {.beta2 = -0.1}); });
  CHECK(contains(e, "beta2"));
  CHECK(contains(e, "-0.1"));
  e = error_of<ValueError>([&] { optim::Adam(params, {.eps = -1e-8}); });
  CHECK(contains(e, "eps"));
  CHECK(contains(e, "-1e-08"));
  e = error_of<ValueError>([&] { optim::Adam(params, {.weight_decay = -0.5}); });
  CHECK(contains(e, "weight_decay"));
  e = error_of<ValueError>([&] { optim::AdamW(params, {.beta2 = 1.5}); });
  CHECK(contains(e, "AdamW"));
  CHECK(contains(e, "beta2"));
  CHECK(contains(e, "1.5"));
}
