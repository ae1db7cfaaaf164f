// Adam / AdamW: option checks, lazy state creation and the per-parameter step through the fused adam_step
// kernel (no temporaries per step).
#include "optim/adam.h"

#include "autograd/grad_mode.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/optim_step.h"

namespace syncgrad::optim {

namespace {

constexpr const char* kExpAvg = "exp_avg";
constexpr const char* kExpAvgSq = "exp_avg_sq";
constexpr const char* kMaxExpAvgSq = "max_exp_avg_sq";

// The named buffer, or fresh zeros of the parameter's shape (stored by the caller once the step succeeded).
Tensor buffer_or_zeros(const std::map<std::string, Tensor>& buffers, const char* name, const Tensor& param) {
  auto it = buffers.find(name);
  return it != buffers.end() ? it->second : zeros_like(param);
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam("Adam", false, std::move(params), options) {}

Adam::Adam(const char* name, bool decoupled_weight_decay, std::vector<Tensor> params, const AdamOptions& options)
    : Optimizer(name, {{"lr", options.lr},
                       {"beta1", options.beta1},
                       {"beta2", options.beta2},
                       {"eps", options.eps},
                       {"weight_decay", options.weight_decay},
                       {"amsgrad", options.amsgrad ? 1.0 : 0.0},
                       {"maximize", options.maximize ? 1.0 : 0.0}}),
      decoupled_weight_decay_(decoupled_weight_decay) {
  init_params(std::move(params));
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions o)
    : Adam("AdamW", true, std::move(params),
           AdamOptions{.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
                       .weight_decay = o.weight_decay, .amsgrad = o.amsgrad, .maximize = o.maximize}) {}

void Adam::validate_options(const std::map<std::string, double>& o) const {
  check_option(o.at("lr") >= 0.0, name_, "learning rate lr", o.at("lr"), "must be >= 0");
  check_option(o.at("eps") >= 0.0, name_, "epsilon value eps", o.at("eps"), "must be >= 0");
  check_option(o.at("beta1") >= 0.0 && o.at("beta1") < 1.0, name_, "beta parameter beta1", o.at("beta1"),
               "must be in [0, 1)");
  check_option(o.at("beta2") >= 0.0 && o.at("beta2") < 1.0, name_, "beta parameter beta2", o.at("beta2"),
               "must be in [0, 1)");
  check_option(o.at("weight_decay") >= 0.0, name_, "weight_decay value", o.at("weight_decay"), "must be >= 0");
}

std::vector<std::string> Adam::state_buffer_names() const { return {kExpAvg, kExpAvgSq, kMaxExpAvgSq}; }

std::vector<std::string> Adam::required_buffers(const std::map<std::string, double>& options) const {
  if (options.at("amsgrad") != 0.0) return {kExpAvg, kExpAvgSq, kMaxExpAvgSq};
  return {kExpAvg, kExpAvgSq};
}

void Adam::step() {
  NoGradGuard no_grad;
  for (const ParamGroup& group : param_groups()) {
    AdamStepArgs args;
    args.lr = option(group, "lr");
    args.beta1 = option(group, "beta1");
    args.beta2 = option(group, "beta2");
    args.eps = option(group, "eps");
    args.weight_decay = option(group, "weight_decay");
    args.decoupled_weight_decay = decoupled_weight_decay_;
    args.amsgrad = flag(group, "amsgrad");
    args.maximize = flag(group, "maximize");
    for (const Tensor& p : group.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      ParamState& state = state_of(p);
      args.step = state.step.value_or(0) + 1;
      const Tensor exp_avg = buffer_or_zeros(state.buffers, kExpAvg, p);
      const Tensor exp_avg_sq = buffer_or_zeros(state.buffers, kExpAvgSq, p);
      const Tensor max_exp_avg_sq = args.amsgrad ? buffer_or_zeros(state.buffers, kMaxExpAvgSq, p) : Tensor();
      raw::adam_step_(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
      state.step = args.step;
      state.buffers.try_emplace(kExpAvg, exp_avg);
      state.buffers.try_emplace(kExpAvgSq, exp_avg_sq);
      if (args.amsgrad) state.buffers.try_emplace(kMaxExpAvgSq, max_exp_avg_sq);
    }
  }
}

}  // namespace syncgrad::optim
