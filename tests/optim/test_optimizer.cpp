// The optimizer base: parameter groups (own lrs, defaults filled in), zero_grad in both modes, lr access,
// parameter checks, and the state_dict round trip (continuing after a load equals continuing uninterrupted)
// with every load error.
#include <doctest/doctest.h>

#include <memory>

#include "optim/adam.h"
#include "optim/sgd.h"
#include "optim_reference.h"

using namespace syncgrad;
using namespace optim_test;

namespace {

// Fresh leaves holding the current values of `params` (converted to `dtype`).
std::vector<Tensor> copies_of(const std::vector<Tensor>& params, DType dtype = DType::f64) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) {
    Tensor c = raw::to(raw::clone(p), dtype);
    c.requires_grad_(true);
    out.push_back(c);
  }
  return out;
}

void run_steps(optim::Optimizer& opt, const std::vector<Tensor>& params, int steps) {
  for (int s = 0; s < steps; ++s) {
    quadratic_backward(params);
    opt.step();
    opt.zero_grad();
  }
}

// Runs `make` twice: one optimizer goes 5 steps uninterrupted; the other goes 2, is saved, loaded into a
// fresh optimizer over copies of its parameters, and continues 3: the values must agree exactly.
template <class Make>
void check_round_trip(Make make) {
  std::vector<Tensor> straight = make_params();
  auto uninterrupted = make(straight);
  run_steps(*uninterrupted, straight, 5);

  std::vector<Tensor> first = make_params();
  auto before = make(first);
  run_steps(*before, first, 2);
  optim::OptimizerStateDict saved = before->state_dict();
  CHECK(!saved.tensors.empty());
  std::vector<Tensor> resumed = copies_of(first);
  auto after = make(resumed);
  after->load_state_dict(saved);
  run_steps(*after, resumed, 3);
  for (size_t i = 0; i < straight.size(); ++i) CHECK(to_vector<double>(resumed[i]) == to_vector<double>(straight[i]));
}

}  // namespace

TEST_CASE("param groups keep their own options and take missing ones from the defaults") {
  std::vector<Tensor> params = make_params();
  optim::SGD opt({params[0]}, {.lr = 0.1, .momentum = 0.9});
  opt.add_param_group({{params[1]}, {{"lr", 0.01}}});
  REQUIRE(opt.param_groups().size() == 2);
  CHECK(opt.lr(0) == 0.1);
  CHECK(opt.lr(1) == 0.01);
  CHECK(opt.param_groups()[1].options.at("momentum") == 0.9);
  CHECK(opt.param_groups()[1].options.at("nesterov") == 0.0);

  SgdReference fast{.lr = 0.1, .momentum = 0.9}, slow{.lr = 0.01, .momentum = 0.9};
  check_steps(opt, params, std::vector<SgdReference>{fast, slow}, 1e-12);

  opt.set_lr(0.5);
  CHECK(opt.lr(0) == 0.5);
  CHECK(opt.lr(1) == 0.5);
  std::string e = error_of<IndexError>([&] { opt.lr(2); });
  CHECK(contains(e, "group 2"));
  CHECK(contains(e, "2 parameter groups"));
  CHECK_THROWS_AS(opt.set_lr(-1.0), ValueError);
}

TEST_CASE("add_param_group validates the group") {
  std::vector<Tensor> params = make_params();
  optim::Adam opt({params[0]});
  std::string e = error_of<ValueError>([&] { opt.add_param_group({{params[0]}, {}}); });
  CHECK(contains(e, "more than once"));
  CHECK(contains(e, "[2, 3]"));
  e = error_of<ValueError>([&] { opt.add_param_group({{}, {}}); });
  CHECK(contains(e, "no parameters"));
  e = error_of<ValueError>([&] { opt.add_param_group({{params[1]}, {{"beta1", 2.0}}}); });
  CHECK(contains(e, "beta1"));
  CHECK(contains(e, "2"));
  CHECK(opt.param_groups().size() == 1);

  Tensor computed = params[1] * 2.0;
  e = error_of<ValueError>([&] { opt.add_param_group({{computed}, {}}); });
  CHECK(contains(e, "non-leaf"));
  e = error_of<DTypeError>([&] { optim::SGD({tensor({1, 2})}, {}); });
  CHECK(contains(e, "int64"));
  e = error_of<ValueError>([&] { optim::SGD(std::vector<Tensor>{}, {}); });
  CHECK(contains(e, "empty parameter list"));
}

TEST_CASE("zero_grad drops gradients or zeroes them in place") {
  std::vector<Tensor> params = make_params();
  optim::SGD opt(params, {.lr = 0.1});
  quadratic_backward(params);
  SUBCASE("set_to_none") {
    opt.zero_grad();
    CHECK(!params[0].grad().defined());
    CHECK(!params[1].grad().defined());
  }
  SUBCASE("in place") {
    Tensor before = params[0].grad();
    opt.zero_grad(false);
    CHECK(params[0].grad().is_same(before));
    CHECK(to_vector<double>(params[0].grad()) == std::vector<double>(6, 0.0));
    CHECK(to_vector<double>(params[1].grad()) == std::vector<double>(4, 0.0));
    // A step with zero gradients and no weight decay leaves the parameters alone.
    opt.step();
    CHECK(to_vector<double>(params[1]) == initial_values()[1]);
  }
}

TEST_CASE("state_dict round trip: continuing after load equals continuing uninterrupted") {
  SUBCASE("SGD with nesterov momentum") {
    check_round_trip([](std::vector<Tensor>& p) {
      return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true});
    });
  }
  SUBCASE("Adam with amsgrad") {
    check_round_trip(
        [](std::vector<Tensor>& p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions{.lr = 0.1, .amsgrad = true}); });
  }
  SUBCASE("AdamW") {
    check_round_trip([](std::vector<Tensor>& p) { return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 0.1}); });
  }
}

TEST_CASE("state_dict exports copies, group options and parameter counts; load takes the saved options") {
  std::vector<Tensor> params = make_params();
  optim::SGD opt({params[0]}, {.lr = 0.1, .momentum = 0.9});
  opt.add_param_group({{params[1]}, {{"lr", 0.02}}});
  run_steps(opt, params, 1);
  optim::OptimizerStateDict state = opt.state_dict();
  REQUIRE(state.groups.size() == 2);
  CHECK(state.groups[0].at("lr") == 0.1);
  CHECK(state.groups[1].at("lr") == 0.02);
  CHECK(state.groups[1].at("params") == 1.0);
  const std::vector<double> saved = to_vector<double>(state.tensors[0].second);
  run_steps(opt, params, 1);
  CHECK(to_vector<double>(state.tensors[0].second) == saved);

  std::vector<Tensor> others = copies_of(params);
  optim::SGD fresh({others[0]}, {.lr = 0.7, .momentum = 0.9});
  fresh.add_param_group({{others[1]}, {}});
  fresh.load_state_dict(state);
  CHECK(fresh.lr(0) == 0.1);
  CHECK(fresh.lr(1) == 0.02);
  CHECK(fresh.param_groups()[1].options.count("params") == 0);
}

TEST_CASE("load_state_dict converts state to the parameters' dtype") {
  std::vector<Tensor> params = make_params();
  optim::Adam opt(params, {.lr = 0.1});
  run_steps(opt, params, 2);
  std::vector<Tensor> singles = copies_of(params, DType::f32);
  optim::Adam fresh(singles, {.lr = 0.1});
  fresh.load_state_dict(opt.state_dict());
  // The buffers follow the float32 parameters (the step count is float32 anyway).
  for (const auto& [key, value] : fresh.state_dict().tensors) {
    INFO(key);
    CHECK(value.dtype() == DType::f32);
  }
  run_steps(fresh, singles, 1);
  run_steps(opt, params, 1);
  check_close(to_vector<double>(singles[0]), to_vector<double>(params[0]), 1e-5);
}

TEST_CASE("load_state_dict errors name the offending key or count") {
  std::vector<Tensor> params = make_params();
  optim::Adam opt(params, {.lr = 0.1});
  run_steps(opt, params, 1);
  const optim::OptimizerStateDict good = opt.state_dict();
  std::vector<Tensor> others = copies_of(params);
  optim::Adam target(others, {.lr = 0.1});
  auto with_tensor = [&](const std::string& key, const Tensor& value) {
    optim::OptimizerStateDict s = good;
    for (auto& entry : s.tensors) {
      if (entry.first == key) entry.second = value;
    }
    return s;
  };

  optim::OptimizerStateDict s = good;
  s.groups.push_back(s.groups[0]);
  std::string e = error_of<ValueError>([&] { target.load_state_dict(s); });
  CHECK(contains(e, "2 parameter groups"));
  CHECK(contains(e, "has 1"));

  s = good;
  s.groups[0]["params"] = 3;
  e = error_of<ValueError>([&] { target.load_state_dict(s); });
  CHECK(contains(e, "3 parameters in the state but 2"));

  e = error_of<ShapeError>([&] { target.load_state_dict(with_tensor("state.1.exp_avg", zeros({5}, {.dtype = DType::f64}))); });
  CHECK(contains(e, "'state.1.exp_avg'"));
  CHECK(contains(e, "[5]"));
  CHECK(contains(e, "[4]"));

  s = good;
  s.tensors.emplace_back("state.7.exp_avg", zeros({4}));
  e = error_of<ValueError>([&] { target.load_state_dict(s); });
  CHECK(contains(e, "'state.7.exp_avg'"));
  CHECK(contains(e, "2 parameters"));

  s = good;
  s.tensors.emplace_back("state.1.momentum_buffer", zeros({4}));
  e = error_of<ValueError>([&] { target.load_state_dict(s); });
  CHECK(contains(e, "'state.1.momentum_buffer'"));

  s = good;
  s.tensors.emplace_back("exp_avg", zeros({4}));
  e = error_of<ValueError>([&] { target.load_state_dict(s); });
  CHECK(contains(e, "'exp_avg'"));

  s = good;
  s.tensors.erase(s.tensors.begin() + 2);  // state.0.exp_avg_sq
  e = error_of<ValueError>([&] { target.load_state_dict(s); });
  CHECK(contains(e, "'state.0.exp_avg_sq' is missing"));

  s = good;
  s.groups[0]["amsgrad"] = 1;
  e = error_of<ValueError>([&] { target.load_state_dict(s); });
  CHECK(contains(e, "'state.0.max_exp_avg_sq' is missing"));

  e = error_of<ValueError>([&] { target.load_state_dict(with_tensor("state.0.step", scalar_tensor(1.5))); });
  CHECK(contains(e, "'state.0.step'"));

  s = good;
  s.groups[0]["lr"] = -3;
  e = error_of<ValueError>([&] { target.load_state_dict(s); });
  CHECK(contains(e, "lr"));
  CHECK(contains(e, "-3"));

  // Nothing was applied by the failed loads.
  CHECK(target.state_dict().tensors.empty());
  CHECK(target.lr() == 0.1);
}
