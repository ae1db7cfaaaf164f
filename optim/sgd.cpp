// SGD: option checks and the per-parameter step through the fused sgd_step kernel.
#include "optim/sgd.h"

#include "autograd/grad_mode.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/optim_step.h"

namespace syncgrad::optim {

namespace {
constexpr const char* kMomentumBuffer = "momentum_buffer";
}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer("SGD", {{"lr", options.lr},
                        {"momentum", options.momentum},
                        {"dampening", options.dampening},
                        {"weight_decay", options.weight_decay},
                        {"nesterov", options.nesterov ? 1.0 : 0.0},
                        {"maximize", options.maximize ? 1.0 : 0.0}}) {
  init_params(std::move(params));
}

void SGD::validate_options(const std::map<std::string, double>& o) const {
  check_option(o.at("lr") >= 0.0, name_, "learning rate lr", o.at("lr"), "must be >= 0");
  check_option(o.at("momentum") >= 0.0, name_, "momentum value", o.at("momentum"), "must be >= 0");
  check_option(o.at("weight_decay") >= 0.0, name_, "weight_decay value", o.at("weight_decay"), "must be >= 0");
  if (o.at("nesterov") != 0.0) {
    check_option(o.at("momentum") > 0.0, name_, "momentum for nesterov", o.at("momentum"),
                 "Nesterov momentum requires momentum > 0 and dampening = 0");
    check_option(o.at("dampening") == 0.0, name_, "dampening for nesterov", o.at("dampening"),
                 "Nesterov momentum requires momentum > 0 and dampening = 0");
  }
}

std::vector<std::string> SGD::state_buffer_names() const { return {kMomentumBuffer}; }

std::vector<std::string> SGD::required_buffers(const std::map<std::string, double>& options) const {
  if (options.at("momentum") == 0.0) return {};
  return {kMomentumBuffer};
}

void SGD::step() {
  NoGradGuard no_grad;
  for (const ParamGroup& group : param_groups()) {
    SGDStepArgs args;
    args.lr = option(group, "lr");
    args.momentum = option(group, "momentum");
    args.dampening = option(group, "dampening");
    args.weight_decay = option(group, "weight_decay");
    args.nesterov = flag(group, "nesterov");
    args.maximize = flag(group, "maximize");
    for (const Tensor& p : group.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (args.momentum == 0.0) {
        raw::sgd_step_(p, grad, Tensor(), args);
        continue;
      }
      ParamState& state = state_of(p);
      auto it = state.buffers.find(kMomentumBuffer);
      args.first_step = it == state.buffers.end();
      const Tensor buffer = args.first_step ? empty_like(p) : it->second;
      raw::sgd_step_(p, grad, buffer, args);
      if (args.first_step) state.buffers.emplace(kMomentumBuffer, buffer);
    }
  }
}

}  // namespace syncgrad::optim
