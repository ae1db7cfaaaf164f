// Module registries, traversal, mode, conversion, state dicts and printing.
#include "nn/module.h"

#include <map>
#include <set>

#include "autograd/grad_mode.h"
#include "autograd/zero_grad.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/views.h"

namespace syncgrad::nn {

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

Tensor Module::forward(const Tensor&) {
  throw Error(type_name_ + ".forward: this module has no single-input forward; call its own methods instead "
              "(e.g. a loss module's forward(input, target), or the layers of a ModuleList)");
}

Tensor Module::forward_many(const std::vector<Tensor>& inputs) {
  SYNCGRAD_CHECK(inputs.size() == 1, ValueError, type_name_, ".forward_many: this module takes one input, got ",
                 inputs.size(), "; pass one tensor, or override forward_many in a module that takes several");
  return forward(inputs[0]);
}

void Module::check_new_name(const std::string& name, const char* what) const {
  std::string op = type_name_ + ".register_" + what;
  SYNCGRAD_CHECK(!name.empty() && name.find('.') == std::string::npos, ValueError, op, ": invalid name \"", name,
                 "\"; names must be non-empty and contain no '.'");
  auto taken = [&](const auto& entries) {
    for (const auto& e : entries) {
      if (e.name == name) return true;
    }
    return false;
  };
  bool child_taken = false;
  for (const auto& [child_name, child] : children_) child_taken = child_taken || child_name == name;
  SYNCGRAD_CHECK(!taken(parameters_) && !taken(buffers_) && !child_taken, ValueError, op, ": the name \"", name,
                 "\" is already registered in this ", type_name_, "; choose another name");
}

Tensor& Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_new_name(name, "parameter");
  SYNCGRAD_CHECK(t.defined(), ValueError, type_name_, ".register_parameter: \"", name,
                 "\" is an undefined tensor; skip the registration for an absent parameter (e.g. bias=false)");
  if (!t.is_leaf()) t = t.detach();
  t.requires_grad_(requires_grad);
  parameters_.push_back({name, std::move(t)});
  return parameters_.back().tensor;
}

Tensor& Module::register_buffer(const std::string& name, Tensor t) {
  check_new_name(name, "buffer");
  SYNCGRAD_CHECK(t.defined(), ValueError, type_name_, ".register_buffer: \"", name, "\" is an undefined tensor");
  buffers_.push_back({name, t.detach()});
  return buffers_.back().tensor;
}

void Module::register_child(const std::string& name, std::shared_ptr<Module> child) {
  check_new_name(name, "module");
  SYNCGRAD_CHECK(child, ValueError, type_name_, ".register_module: \"", name, "\" is a null module");
  children_.emplace_back(name, std::move(child));
}

void Module::collect(StateDict& out, const std::string& prefix, bool recurse, bool buffers) const {
  for (const NamedTensor& e : buffers ? buffers_ : parameters_) out.emplace_back(prefix + e.name, e.tensor);
  if (!recurse) return;
  for (const auto& [name, child] : children_) child->collect(out, prefix + name + ".", true, buffers);
}

namespace {

// Keeps the first occurrence of each tensor (shared weights appear once).
StateDict unique_tensors(StateDict entries) {
  std::set<const TensorImpl*> seen;
  StateDict out;
  for (auto& entry : entries) {
    if (seen.insert(entry.second.impl()).second) out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

StateDict Module::named_parameters(bool recurse) const {
  StateDict out;
  collect(out, "", recurse, false);
  return unique_tensors(std::move(out));
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

StateDict Module::named_buffers(bool recurse) const {
  StateDict out;
  collect(out, "", recurse, true);
  return unique_tensors(std::move(out));
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const { return children_; }

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

template <class Convert> void Module::convert_in_place(const Convert& convert) {
  NoGradGuard no_grad;
  StateDict all = named_parameters();
  for (auto& entry : named_buffers()) all.push_back(std::move(entry));
  for (auto& [name, t] : all) {
    Tensor converted = convert(t);
    if (converted.is_same(t)) continue;
    Tensor grad = t.grad();
    t.impl()->set_data(*converted.impl());
    if (grad.defined()) t.set_grad(convert(grad));
  }
}

void Module::to(Device device) {
  convert_in_place([&](const Tensor& t) { return raw::to(t, device); });
}

void Module::to(DType dtype) {
  SYNCGRAD_CHECK(is_floating(dtype), DTypeError, type_name_, ".to: modules convert to floating dtypes only, got ",
                 dtype_name(dtype), "; convert single tensors with syncgrad::to instead");
  convert_in_place([&](const Tensor& t) { return is_floating(t.dtype()) ? raw::to(t, dtype) : t; });
}

void Module::collect_state(StateDict& out, const std::string& prefix) const {
  for (const NamedTensor& e : parameters_) out.emplace_back(prefix + e.name, e.tensor.detach());
  for (const NamedTensor& e : buffers_) out.emplace_back(prefix + e.name, e.tensor.detach());
  for (const auto& [name, child] : children_) child->collect_state(out, prefix + name + ".");
}

StateDict Module::state_dict() const {
  StateDict out;
  collect_state(out, "");
  return out;
}

namespace {

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "" : ", ") + ("\"" + k + "\"");
  return out;
}

// Why `value` cannot be loaded into `target`, or "" when it can.
std::string load_problem(const Tensor& target, const Tensor& value) {
  if (!value.defined()) return "undefined tensor";
  if (value.sizes() != target.sizes()) {
    return "shape " + shape_str(value.sizes()) + " in the state, " + shape_str(target.sizes()) + " in the module";
  }
  bool convertible = value.dtype() == target.dtype() || (is_floating(value.dtype()) && is_floating(target.dtype()));
  if (!convertible) {
    return std::string("dtype ") + dtype_name(value.dtype()) + " in the state, " + dtype_name(target.dtype()) +
           " in the module";
  }
  return "";
}

}  // namespace

void Module::load_state_dict(const StateDict& state, bool strict) {
  StateDict own;
  collect_state(own, "");
  std::map<std::string, const Tensor*> given;
  std::vector<std::string> duplicated, unexpected, missing, mismatched;
  bool shape_problem = false;
  for (const auto& [key, value] : state) {
    if (!given.emplace(key, &value).second) duplicated.push_back(key);
  }
  std::set<std::string> own_keys;
  for (const auto& [key, target] : own) {
    own_keys.insert(key);
    auto it = given.find(key);
    if (it == given.end()) {
      if (strict) missing.push_back(key);
      continue;
    }
    std::string problem = load_problem(target, *it->second);
    if (!problem.empty()) {
      shape_problem = shape_problem || (it->second->defined() && it->second->sizes() != target.sizes());
      mismatched.push_back("\"" + key + "\" (" + problem + ")");
    }
  }
  if (strict) {
    for (const auto& [key, value] : state) {
      if (!own_keys.contains(key)) unexpected.push_back(key);
    }
  }
  if (!duplicated.empty() || !unexpected.empty() || !missing.empty() || !mismatched.empty()) {
    std::string message = type_name_ + ".load_state_dict: the state does not fit this module:";
    if (!missing.empty()) message += "\n  missing keys: " + join_keys(missing);
    if (!unexpected.empty()) message += "\n  unexpected keys: " + join_keys(unexpected);
    if (!duplicated.empty()) message += "\n  duplicated keys: " + join_keys(duplicated);
    if (!mismatched.empty()) {
      message += "\n  mismatched keys:";
      for (const std::string& m : mismatched) message += " " + m + ";";
    }
    message += "\n  (pass strict=false to ignore missing and unexpected keys; shapes and dtypes must still fit)";
    SYNCGRAD_CHECK(!shape_problem, ShapeError, message);
    throw ValueError(message);
  }
  NoGradGuard no_grad;
  for (const auto& [key, target] : own) {
    auto it = given.find(key);
    if (it != given.end()) raw::copy_(target, *it->second);
  }
}

void Module::zero_grad(bool set_to_none) { autograd::zero_grad(parameters(), set_to_none); }

std::string Module::to_string() const {
  std::string extra = extra_repr();
  if (children_.empty()) return type_name_ + "(" + extra + ")";
  std::vector<std::string> lines;
  if (!extra.empty()) lines.push_back(extra);
  for (const auto& [name, child] : children_) lines.push_back("(" + name + "): " + child->to_string());
  std::string out = type_name_ + "(\n";
  for (const std::string& line : lines) {
    out += "  ";
    for (char c : line) out += c == '\n' ? std::string("\n  ") : std::string(1, c);
    out += "\n";
  }
  return out + ")";
}

void consume_prefix_if_present(StateDict& state, const std::string& prefix) {
  bool all_prefixed = !state.empty();
  for (const auto& [name, t] : state) all_prefixed = all_prefixed && name.rfind(prefix, 0) == 0;
  if (!all_prefixed) return;
  for (auto& [name, t] : state) name = name.substr(prefix.size());
}

}  // namespace syncgrad::nn
