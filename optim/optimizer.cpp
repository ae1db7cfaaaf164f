// Optimizer base: parameter groups, zero_grad, learning rates and the state_dict round trip.
#include "optim/optimizer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <string>
#include <unordered_set>

#include "autograd/zero_grad.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/grad_scale.h"
#include "tensor/ops/views.h"

namespace syncgrad::optim {
namespace {

// The group key that records how many parameters a group had (as PyTorch's "params" list of indices).
constexpr const char* kParamCountKey = "params";

// Shortest readable form of an option value: 0.001, -0.1, 1e-08, 3.
std::string number(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

// The shortest text that reads back as exactly `value`: 0.05, 0.1, 1e-08, 0.30000000000000004.
std::string exact_number(double value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

// Splits "state.<index>.<name>"; throws ValueError naming the key otherwise.
std::pair<size_t, std::string> parse_state_key(const std::string& key, const char* optimizer) {
  const std::string prefix = "state.";
  const size_t dot = key.find('.', prefix.size());
  bool ok = key.rfind(prefix, 0) == 0 && dot != std::string::npos && dot > prefix.size() && dot + 1 < key.size();
  size_t index = 0;
  if (ok) {
    const std::string digits = key.substr(prefix.size(), dot - prefix.size());
    ok = std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         digits.size() < 10;
    if (ok) index = static_cast<size_t>(std::stoull(digits));
  }
  SYNCGRAD_CHECK(ok, ValueError, optimizer, ".load_state_dict: key '", key,
                 "' is not of the form 'state.<parameter index>.<name>'");
  return {index, key.substr(dot + 1)};
}

// A copy of `src` with the parameter's dtype and device.
Tensor copy_like(const Tensor& src, const Tensor& param) {
  Tensor out = empty_like(param);
  raw::copy_(out, src);
  return out;
}

}  // namespace

void check_option(bool ok, const char* optimizer, const std::string& what, double value, const char* rule) {
  SYNCGRAD_CHECK(ok, ValueError, optimizer, ": invalid ", what, " ", number(value), " (", rule, ")");
}

Optimizer::Optimizer(const char* name, std::map<std::string, double> defaults)
    : name_(name), defaults_(std::move(defaults)) {}

void Optimizer::init_params(std::vector<Tensor> params) {
  SYNCGRAD_CHECK(!params.empty(), ValueError, name_, ": got an empty parameter list; pass the tensors to optimize");
  validate_options(defaults_);
  add_param_group(ParamGroup{std::move(params), {}});
}

void Optimizer::check_new_param(const Tensor& param) const {
  SYNCGRAD_CHECK(param.defined(), ValueError, name_, ": a parameter is an undefined tensor");
  SYNCGRAD_CHECK(is_floating(param.dtype()), DTypeError, name_, ": a parameter has dtype ", dtype_name(param.dtype()),
                 "; only floating tensors (float32, float64, float16, bfloat16) can be optimized");
  SYNCGRAD_CHECK(param.is_leaf(), ValueError, name_, ": can't optimize a non-leaf tensor (shape ",
                 shape_str(param.sizes()),
                 "); optimize the leaf it was computed from, or .detach() it and set requires_grad");
}

void Optimizer::add_param_group(ParamGroup group) {
  SYNCGRAD_CHECK(!group.params.empty(), ValueError, name_, ".add_param_group: the group has no parameters");
  std::unordered_set<const TensorImpl*> seen;
  for (const ParamGroup& existing : groups_) {
    for (const Tensor& p : existing.params) seen.insert(p.impl());
  }
  for (const Tensor& p : group.params) {
    check_new_param(p);
    SYNCGRAD_CHECK(seen.insert(p.impl()).second, ValueError, name_, ".add_param_group: a parameter of shape ",
                   shape_str(p.sizes()),
                   " appears more than once among the parameter groups; each tensor may be optimized once");
  }
  for (const auto& [key, value] : defaults_) group.options.try_emplace(key, value);
  validate_options(group.options);
  groups_.push_back(std::move(group));
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const ParamGroup& group : groups_) autograd::zero_grad(group.params, set_to_none);
}

double Optimizer::lr(size_t group) const {
  SYNCGRAD_CHECK(group < groups_.size(), IndexError, name_, ".lr: group ", group, " out of range (the optimizer has ",
                 groups_.size(), " parameter groups)");
  return groups_[group].options.at("lr");
}

void Optimizer::set_lr(double lr) {
  check_option(lr >= 0.0, name_, "learning rate lr", lr, "must be >= 0");
  for (ParamGroup& group : groups_) group.options["lr"] = lr;
}

std::vector<std::pair<std::string, std::string>> Optimizer::settings() const {
  std::vector<std::pair<std::string, std::string>> out = {{"optimizer", name_}};
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string group = "group " + std::to_string(g) + " ";
    out.emplace_back(group + kParamCountKey, std::to_string(groups_[g].params.size()));
    for (const auto& [key, value] : groups_[g].options) out.emplace_back(group + key, exact_number(value));
  }
  return out;
}

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict out;
  size_t index = 0;
  for (const ParamGroup& group : groups_) {
    std::map<std::string, double> options = group.options;
    options[kParamCountKey] = static_cast<double>(group.params.size());
    out.groups.push_back(std::move(options));
    for (const Tensor& p : group.params) {
      const std::string prefix = "state." + std::to_string(index++) + ".";
      auto it = state_.find(p.impl());
      if (it == state_.end()) continue;
      const ParamState& st = it->second;
      if (st.step) {
        out.tensors.emplace_back(prefix + "step", scalar_tensor(static_cast<double>(*st.step), DType::f32, kCPU));
      }
      for (const std::string& name : state_buffer_names()) {
        auto buffer = st.buffers.find(name);
        if (buffer != st.buffers.end()) out.tensors.emplace_back(prefix + name, raw::clone(buffer->second));
      }
    }
  }
  return out;
}

void Optimizer::load_state_dict(const OptimizerStateDict& state) {
  const std::string where = std::string(name_) + ".load_state_dict: ";
  SYNCGRAD_CHECK(state.groups.size() == groups_.size(), ValueError, where, "the state has ", state.groups.size(),
                 " parameter groups but the optimizer has ", groups_.size());
  std::vector<const Tensor*> params;
  std::vector<size_t> group_of;
  std::vector<std::map<std::string, double>> options(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    options[g] = state.groups[g];
    auto count = options[g].find(kParamCountKey);
    if (count != options[g].end()) {
      SYNCGRAD_CHECK(count->second == static_cast<double>(groups_[g].params.size()), ValueError, where, "group ", g,
                     " has ", number(count->second), " parameters in the state but ", groups_[g].params.size(),
                     " in the optimizer");
      options[g].erase(count);
    }
    for (const auto& [key, value] : defaults_) options[g].try_emplace(key, value);
    validate_options(options[g]);
    for (const Tensor& p : groups_[g].params) {
      params.push_back(&p);
      group_of.push_back(g);
    }
  }

  const std::vector<std::string> names = state_buffer_names();
  std::map<size_t, ParamState> loaded;
  for (const auto& [key, value] : state.tensors) {
    auto [index, name] = parse_state_key(key, name_);
    SYNCGRAD_CHECK(index < params.size(), ValueError, where, "key '", key, "' refers to parameter ", index,
                   " but the optimizer has ", params.size(), " parameters");
    SYNCGRAD_CHECK(value.defined(), ValueError, where, "key '", key, "' holds an undefined tensor");
    const Tensor& param = *params[index];
    if (name == "step" && counts_steps()) {
      SYNCGRAD_CHECK(value.numel() == 1, ShapeError, where, "key '", key, "' has shape ", shape_str(value.sizes()),
                     "; a step count is a single value");
      const double step = value.item<double>();
      SYNCGRAD_CHECK(step >= 0.0 && step == std::floor(step), ValueError, where, "key '", key, "' holds ", number(step),
                     "; a step count is an integer >= 0");
      loaded[index].step = static_cast<int64_t>(step);
      continue;
    }
    SYNCGRAD_CHECK(std::find(names.begin(), names.end(), name) != names.end(), ValueError, where, "key '", key,
                   "' names no state of ", name_, " (unknown entry '", name, "')");
    SYNCGRAD_CHECK(value.sizes() == param.sizes(), ShapeError, where, "key '", key, "' has shape ",
                   shape_str(value.sizes()), " but parameter ", index, " has shape ", shape_str(param.sizes()));
    loaded[index].buffers[name] = copy_like(value, param);
  }
  for (auto& [index, st] : loaded) {
    const std::string prefix = "state." + std::to_string(index) + ".";
    SYNCGRAD_CHECK(!counts_steps() || st.step, ValueError, where, "key '", prefix, "step' is missing");
    for (const std::string& name : required_buffers(options[group_of[index]])) {
      SYNCGRAD_CHECK(st.buffers.count(name) != 0, ValueError, where, "key '", prefix, name, "' is missing");
    }
  }

  state_.clear();
  for (auto& [index, st] : loaded) state_[params[index]->impl()] = std::move(st);
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = std::move(options[g]);
}

bool Optimizer::unscale_gradients_(double inv_scale) {
  // Gradients grouped by device: one found-inf flag (one read) per device.
  std::vector<std::pair<Device, std::vector<Tensor>>> by_device;
  size_t index = 0;
  for (const ParamGroup& group : groups_) {
    for (const Tensor& param : group.params) {
      const Tensor grad = param.grad();
      if (grad.defined()) {
        SYNCGRAD_CHECK(grad.dtype() != DType::f16, DTypeError, "GradScaler.unscale_: parameter ", index,
                       " has a float16 gradient; keep parameters (the master weights) in float32 and run the model "
                       "under autocast instead of converting it to float16");
        auto it = by_device.begin();
        while (it != by_device.end() && !(it->first == grad.device())) ++it;
        if (it == by_device.end()) it = by_device.insert(it, {grad.device(), {}});
        it->second.push_back(grad);
      }
      ++index;
    }
  }
  bool found_inf = false;
  for (const auto& [device, grads] : by_device) {
    if (raw::unscale_grads_(grads, inv_scale)) found_inf = true;
  }
  return found_inf;
}

}  // namespace syncgrad::optim
