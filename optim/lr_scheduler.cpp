// Learning-rate schedulers: the shared epoch bookkeeping and each schedule's closed form.
#include "optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "tensor/check.h"

namespace syncgrad::optim {
namespace {

constexpr const char* kInitialLr = "initial_lr";

// ValueError "<scheduler>: invalid <what> <value> (<rule>)" unless ok.
void check_arg(bool ok, const char* scheduler, const char* what, double value, const char* rule) {
  SYNCGRAD_CHECK(ok, ValueError, scheduler, ": invalid ", what, " ", value, " (", rule, ")");
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (ParamGroup& group : optimizer.param_groups()) {
    base_lrs_.push_back(group.options.try_emplace(kInitialLr, group.options.at("lr")).first->second);
  }
}

void LRScheduler::start() {
  last_epoch_ = 0;
  apply();
}

void LRScheduler::step() {
  ++last_epoch_;
  apply();
}

void LRScheduler::apply() {
  std::vector<ParamGroup>& groups = optimizer_.param_groups();
  SYNCGRAD_CHECK(groups.size() == base_lrs_.size(), ValueError, "LRScheduler.step: the optimizer has ", groups.size(),
                 " parameter groups but the scheduler was built for ", base_lrs_.size(),
                 "; create the scheduler after adding every group");
  last_lr_.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    last_lr_[g] = lr_at(base_lrs_[g], last_epoch_);
    groups[g].options["lr"] = last_lr_[g];
  }
}

std::map<std::string, double> LRScheduler::state_dict() const {
  std::map<std::string, double> state{{"last_epoch", static_cast<double>(last_epoch_)}};
  for (size_t g = 0; g < base_lrs_.size(); ++g) state["base_lr." + std::to_string(g)] = base_lrs_[g];
  return state;
}

void LRScheduler::load_state_dict(const std::map<std::string, double>& state) {
  auto epoch = state.find("last_epoch");
  SYNCGRAD_CHECK(epoch != state.end(), ValueError, "LRScheduler.load_state_dict: key 'last_epoch' is missing");
  check_arg(epoch->second >= 0.0 && epoch->second == std::floor(epoch->second), "LRScheduler.load_state_dict",
            "last_epoch", epoch->second, "must be an integer >= 0");
  std::vector<double> base_lrs(base_lrs_.size());
  for (size_t g = 0; g < base_lrs.size(); ++g) {
    const std::string key = "base_lr." + std::to_string(g);
    auto it = state.find(key);
    SYNCGRAD_CHECK(it != state.end(), ValueError, "LRScheduler.load_state_dict: key '", key, "' is missing");
    base_lrs[g] = it->second;
  }
  SYNCGRAD_CHECK(state.size() == base_lrs.size() + 1, ValueError, "LRScheduler.load_state_dict: the state has ",
                 state.size() - 1, " base lrs but the scheduler has ", base_lrs.size(), " groups");
  base_lrs_ = std::move(base_lrs);
  last_epoch_ = static_cast<int64_t>(epoch->second);
  apply();
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  check_arg(step_size >= 1, "StepLR", "step_size", static_cast<double>(step_size), "must be >= 1");
  check_arg(gamma >= 0.0, "StepLR", "gamma", gamma, "must be >= 0");
  start();
}

double StepLR::lr_at(double base_lr, int64_t epoch) const {
  return base_lr * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  check_arg(T_max >= 1, "CosineAnnealingLR", "T_max", static_cast<double>(T_max), "must be >= 1");
  check_arg(eta_min >= 0.0, "CosineAnnealingLR", "eta_min", eta_min, "must be >= 0");
  start();
}

double CosineAnnealingLR::lr_at(double base_lr, int64_t epoch) const {
  const double phase = std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(t_max_);
  return eta_min_ + (base_lr - eta_min_) * (1.0 + std::cos(phase)) / 2.0;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  check_arg(start_factor > 0.0 && start_factor <= 1.0, "LinearLR", "start_factor", start_factor, "must be in (0, 1]");
  check_arg(end_factor >= 0.0 && end_factor <= 1.0, "LinearLR", "end_factor", end_factor, "must be in [0, 1]");
  check_arg(total_iters >= 1, "LinearLR", "total_iters", static_cast<double>(total_iters), "must be >= 1");
  start();
}

double LinearLR::lr_at(double base_lr, int64_t epoch) const {
  const double progress = static_cast<double>(std::min(epoch, total_iters_)) / static_cast<double>(total_iters_);
  return base_lr * (start_factor_ + (end_factor_ - start_factor_) * progress);
}

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  SYNCGRAD_CHECK(!schedulers_.empty(), ValueError, "SequentialLR: needs at least one scheduler");
  SYNCGRAD_CHECK(milestones_.size() + 1 == schedulers_.size(), ValueError, "SequentialLR: got ", schedulers_.size(),
                 " schedulers and ", milestones_.size(), " milestones; there must be one milestone fewer");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    SYNCGRAD_CHECK(schedulers_[i] != nullptr, ValueError, "SequentialLR: scheduler ", i, " is null");
    SYNCGRAD_CHECK(&schedulers_[i]->optimizer() == &optimizer, ValueError, "SequentialLR: scheduler ", i,
                   " belongs to another optimizer; every scheduler must drive the same one");
  }
  for (size_t i = 0; i < milestones_.size(); ++i) {
    const bool increasing = i == 0 ? milestones_[i] >= 1 : milestones_[i] > milestones_[i - 1];
    check_arg(increasing, "SequentialLR", ("milestone " + std::to_string(i)).c_str(),
              static_cast<double>(milestones_[i]), "milestones must be >= 1 and strictly increasing");
  }
  start();
}

double SequentialLR::lr_at(double base_lr, int64_t epoch) const {
  const size_t index = static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), epoch) -
                                           milestones_.begin());
  const int64_t offset = index == 0 ? 0 : milestones_[index - 1];
  return schedulers_[index]->lr_at(base_lr, epoch - offset);
}

namespace {

std::vector<std::shared_ptr<LRScheduler>> warmup_then_cosine(Optimizer& optimizer, int64_t warmup_iters,
                                                             int64_t total_iters, double warmup_start_factor,
                                                             double eta_min) {
  check_arg(warmup_iters >= 1, "WarmupCosineLR", "warmup_iters", static_cast<double>(warmup_iters), "must be >= 1");
  check_arg(total_iters > warmup_iters, "WarmupCosineLR", "total_iters", static_cast<double>(total_iters),
            "must be greater than warmup_iters");
  return {std::make_shared<LinearLR>(optimizer, warmup_start_factor, 1.0, warmup_iters),
          std::make_shared<CosineAnnealingLR>(optimizer, total_iters - warmup_iters, eta_min)};
}

}  // namespace

WarmupCosineLR::WarmupCosineLR(Optimizer& optimizer, int64_t warmup_iters, int64_t total_iters,
                               double warmup_start_factor, double eta_min)
    : SequentialLR(optimizer, warmup_then_cosine(optimizer, warmup_iters, total_iters, warmup_start_factor, eta_min),
                   {warmup_iters}) {}

}  // namespace syncgrad::optim
