// LR schedulers: lr sequences against the closed forms (and a few hand-computed values), several groups,
// the warmup+cosine composition, initial_lr bookkeeping, state round trip and argument checks.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "optim/lr_scheduler.h"
#include "optim/sgd.h"
#include "optim_reference.h"

using namespace syncgrad;
using namespace optim_test;

namespace {

// An SGD over two parameter groups with base lrs 0.1 and 0.02.
struct TwoGroups {
  std::vector<Tensor> params = make_params();
  optim::SGD opt{{params[0]}, {.lr = 0.1}};
  TwoGroups() { opt.add_param_group({{params[1]}, {{"lr", 0.02}}}); }
};

// Checks epochs 0..expected(0).size()-1: lr of each group (from the scheduler and the optimizer).
template <class Expected>
void check_sequence(optim::LRScheduler& scheduler, optim::Optimizer& opt, int64_t epochs, Expected expected) {
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    if (epoch > 0) scheduler.step();
    INFO("epoch " << epoch);
    CHECK(scheduler.last_epoch() == epoch);
    const std::vector<double>& last = scheduler.get_last_lr();
    REQUIRE(last.size() == opt.param_groups().size());
    for (size_t g = 0; g < last.size(); ++g) {
      const double want = expected(scheduler.base_lrs()[g], epoch);
      CHECK(last[g] == doctest::Approx(want).epsilon(1e-12));
      CHECK(opt.lr(g) == last[g]);
    }
  }
}

const double kPi = std::numbers::pi;

}  // namespace

TEST_CASE("StepLR multiplies by gamma every step_size epochs") {
  TwoGroups t;
  optim::StepLR scheduler(t.opt, 3, 0.5);
  CHECK(scheduler.base_lrs() == std::vector<double>{0.1, 0.02});
  check_sequence(scheduler, t.opt, 10, [](double base, int64_t e) { return base * std::pow(0.5, e / 3); });
  // Epoch 9 is in the fourth period: 0.1 * 0.5^3.
  CHECK(t.opt.lr(0) == doctest::Approx(0.0125));
}

TEST_CASE("CosineAnnealingLR follows the cosine closed form") {
  TwoGroups t;
  optim::CosineAnnealingLR scheduler(t.opt, 10, 0.01);
  check_sequence(scheduler, t.opt, 15, [](double base, int64_t e) {
    return 0.01 + (base - 0.01) * (1 + std::cos(kPi * static_cast<double>(e) / 10)) / 2;
  });
}

TEST_CASE("CosineAnnealingLR hand-computed points") {
  std::vector<Tensor> params = make_params();
  optim::SGD opt(params, {.lr = 0.1});
  optim::CosineAnnealingLR scheduler(opt, 4);
  std::vector<double> seen{opt.lr()};
  for (int i = 0; i < 4; ++i) {
    scheduler.step();
    seen.push_back(opt.lr());
  }
  check_close(seen, {0.1, 0.1 * (1 + std::sqrt(0.5)) / 2, 0.05, 0.1 * (1 - std::sqrt(0.5)) / 2, 0.0}, 1e-12);
}

TEST_CASE("LinearLR ramps from start_factor to end_factor, then holds") {
  TwoGroups t;
  optim::LinearLR scheduler(t.opt);  // 1/3 -> 1 over 5 epochs
  check_sequence(scheduler, t.opt, 8, [](double base, int64_t e) {
    const double progress = static_cast<double>(std::min<int64_t>(e, 5)) / 5;
    return base * (1.0 / 3 + (1 - 1.0 / 3) * progress);
  });
  CHECK(t.opt.lr(0) == doctest::Approx(0.1));

  std::vector<Tensor> params = make_params();
  optim::SGD opt(params, {.lr = 1.0});
  optim::LinearLR decay(opt, 1.0, 0.5, 2);
  decay.step();
  CHECK(opt.lr() == doctest::Approx(0.75));
}

TEST_CASE("SequentialLR and WarmupCosineLR: linear warmup, then cosine") {
  SUBCASE("WarmupCosineLR") {
    TwoGroups t;
    optim::WarmupCosineLR scheduler(t.opt, 3, 10, 0.1, 0.0);
    check_sequence(scheduler, t.opt, 13, [](double base, int64_t e) {
      if (e < 3) return base * (0.1 + 0.9 * static_cast<double>(e) / 3);
      return base * (1 + std::cos(kPi * static_cast<double>(e - 3) / 7)) / 2;
    });
  }
  SUBCASE("SequentialLR of the same pieces, hand-computed points") {
    std::vector<Tensor> params = make_params();
    optim::SGD opt(params, {.lr = 1.0});
    auto warmup = std::make_shared<optim::LinearLR>(opt, 0.25, 1.0, 2);
    auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, 2);
    optim::SequentialLR scheduler(opt, {warmup, cosine}, {2});
    std::vector<double> seen{opt.lr()};
    for (int i = 0; i < 4; ++i) {
      scheduler.step();
      seen.push_back(opt.lr());
    }
    check_close(seen, {0.25, 0.625, 1.0, 0.5, 0.0}, 1e-12);
  }
}

TEST_CASE("schedulers record initial_lr once and build on it") {
  std::vector<Tensor> params = make_params();
  optim::SGD opt(params, {.lr = 0.1});
  optim::LinearLR first(opt, 0.5, 1.0, 4);
  CHECK(opt.param_groups()[0].options.at("initial_lr") == 0.1);
  CHECK(opt.lr() == doctest::Approx(0.05));
  optim::StepLR second(opt, 2);
  CHECK(second.base_lrs() == std::vector<double>{0.1});
  CHECK(opt.lr() == doctest::Approx(0.1));
}

TEST_CASE("scheduler state round trip resumes the sequence") {
  TwoGroups a;
  optim::CosineAnnealingLR scheduler(a.opt, 8, 0.001);
  for (int i = 0; i < 5; ++i) scheduler.step();
  const std::map<std::string, double> state = scheduler.state_dict();
  CHECK(state.at("last_epoch") == 5);
  CHECK(state.at("base_lr.1") == 0.02);

  TwoGroups b;
  optim::CosineAnnealingLR resumed(b.opt, 8, 0.001);
  resumed.load_state_dict(state);
  CHECK(resumed.last_epoch() == 5);
  CHECK(b.opt.lr(0) == a.opt.lr(0));
  scheduler.step();
  resumed.step();
  CHECK(resumed.get_last_lr() == scheduler.get_last_lr());

  std::map<std::string, double> broken = state;
  broken.erase("base_lr.1");
  std::string e = error_of<ValueError>([&] { resumed.load_state_dict(broken); });
  CHECK(contains(e, "'base_lr.1' is missing"));
  broken = state;
  broken["last_epoch"] = -2;
  e = error_of<ValueError>([&] { resumed.load_state_dict(broken); });
  CHECK(contains(e, "last_epoch"));
}

TEST_CASE("schedulers reject invalid arguments with ValueError naming them") {
  std::vector<Tensor> params = make_params();
  optim::SGD opt(params, {.lr = 0.1});
  std::string e = error_of<ValueError>([&] { optim::StepLR(opt, 0); });
  CHECK(contains(e, "StepLR"));
  CHECK(contains(e, "step_size 0"));
  e = error_of<ValueError>([&] { optim::CosineAnnealingLR(opt, 0); });
  CHECK(contains(e, "T_max 0"));
  e = error_of<ValueError>([&] { optim::LinearLR(opt, 0.0); });
  CHECK(contains(e, "start_factor 0"));
  e = error_of<ValueError>([&] { optim::LinearLR(opt, 0.5, 1.5); });
  CHECK(contains(e, "end_factor 1.5"));
  e = error_of<ValueError>([&] { optim::LinearLR(opt, 0.5, 1.0, 0); });
  CHECK(contains(e, "total_iters 0"));
  e = error_of<ValueError>([&] { optim::WarmupCosineLR(opt, 5, 5); });
  CHECK(contains(e, "total_iters 5"));

  auto step = std::make_shared<optim::StepLR>(opt, 2);
  auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, 4);
  e = error_of<ValueError>([&] { optim::SequentialLR(opt, {step, cosine}, {}); });
  CHECK(contains(e, "one milestone fewer"));
  e = error_of<ValueError>([&] { optim::SequentialLR(opt, {step, cosine, step}, {3, 3}); });
  CHECK(contains(e, "strictly increasing"));
  std::vector<Tensor> others = make_params();
  optim::SGD other(others, {.lr = 0.1});
  auto foreign = std::make_shared<optim::StepLR>(other, 2);
  e = error_of<ValueError>([&] { optim::SequentialLR(opt, {step, foreign}, {2}); });
  CHECK(contains(e, "another optimizer"));
}
