// SGD: three steps on the quadratic problem against PyTorch's algorithm in double for each option set
// (plain, momentum with dampening, nesterov, weight decay, maximize), float32 and float64, and option checks.
#include <doctest/doctest.h>

#include "optim/sgd.h"
#include "optim_reference.h"

using namespace syncgrad;
using namespace optim_test;

namespace {

SgdReference reference_of(const optim::SGDOptions& o) {
  SgdReference r;
  r.lr = o.lr;
  r.momentum = o.momentum;
  r.dampening = o.dampening;
  r.weight_decay = o.weight_decay;
  r.nesterov = o.nesterov;
  r.maximize = o.maximize;
  return r;
}

void check_sgd(const optim::SGDOptions& options, DType dtype, double tol) {
  std::vector<Tensor> params = make_params(dtype);
  optim::SGD opt(params, options);
  check_steps(opt, params, std::vector<SgdReference>(params.size(), reference_of(options)), tol);
}

}  // namespace

TEST_CASE("SGD matches PyTorch's algorithm for three steps") {
  SUBCASE("plain") { check_sgd({.lr = 0.1}, DType::f64, 1e-12); }
  SUBCASE("momentum and dampening") { check_sgd({.lr = 0.05, .momentum = 0.9, .dampening = 0.3}, DType::f64, 1e-12); }
  SUBCASE("nesterov with weight decay") {
    check_sgd({.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true}, DType::f64, 1e-12);
  }
  SUBCASE("maximize with momentum and weight decay") {
    check_sgd({.lr = 0.02, .momentum = 0.5, .weight_decay = 0.2, .maximize = true}, DType::f64, 1e-12);
  }
  SUBCASE("float32") { check_sgd({.lr = 0.05, .momentum = 0.9, .nesterov = true}, DType::f32, 1e-5); }
}

TEST_CASE("SGD: the first momentum step stores the gradient as the buffer") {
  std::vector<Tensor> params = make_params();
  optim::SGD opt(params, {.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
  quadratic_backward(params);
  const std::vector<double> grad = to_vector<double>(params[0].grad());
  opt.step();
  optim::OptimizerStateDict state = opt.state_dict();
  REQUIRE(state.tensors.size() == 2);
  CHECK(state.tensors[0].first == "state.0.momentum_buffer");
  CHECK(state.tensors[1].first == "state.1.momentum_buffer");
  check_close(to_vector<double>(state.tensors[0].second), grad, 1e-15);
}

TEST_CASE("SGD skips parameters without a gradient and keeps no state for them") {
  std::vector<Tensor> params = make_params();
  Tensor unused = from_vector(std::vector<double>{1.0, 2.0}, {2});
  unused.requires_grad_(true);
  optim::SGD opt({params[0], params[1], unused}, {.lr = 0.1, .momentum = 0.9});
  quadratic_backward(params);
  opt.step();
  CHECK(to_vector<double>(unused) == std::vector<double>{1.0, 2.0});
  for (const auto& [key, value] : opt.state_dict().tensors) CHECK(key.rfind("state.2.", 0) != 0);
}

TEST_CASE("SGD without momentum keeps no state") {
  std::vector<Tensor> params = make_params();
  optim::SGD opt(params, {.lr = 0.1});
  quadratic_backward(params);
  opt.step();
  CHECK(opt.state_dict().tensors.empty());
}

TEST_CASE("SGD rejects invalid options with ValueError naming the option and value") {
  std::vector<Tensor> params = make_params();
  std::string e = error_of<ValueError>([&] { optim::SGD(params, {.lr = -0.1}); });
  CHECK(contains(e, "SGD"));
  CHECK(contains(e, "lr"));
  CHECK(contains(e, "-0.1"));
  e = error_of<ValueError>([&] { optim::SGD(params, {.momentum = -0.5}); });
  CHECK(contains(e, "momentum"));
  CHECK(contains(e, "-0.5"));
  e = error_of<ValueError>([&] { optim::SGD(params, {.weight_decay = -1}); });
  CHECK(contains(e, "weight_decay"));
  CHECK(contains(e, "-1"));
  e = error_of<ValueError>([&] { optim::SGD(params, {.nesterov = true}); });
  CHECK(contains(e, "Nesterov"));
  CHECK(contains(e, "momentum"));
  e = error_of<ValueError>([&] { optim::SGD(params, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}); });
  CHECK(contains(e, "dampening"));
  CHECK(contains(e, "0.1"));
}
