// The optimizer base: parameter groups with per-group options, per-parameter state keyed by the parameter,
// zero_grad, learning-rate access and state_dict()/load_state_dict(). SGD, Adam and AdamW derive from it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace syncgrad::optim {

// Parameters optimized with one set of options ("lr", "momentum", ...; booleans are 0 or 1).
struct ParamGroup {
  std::vector<Tensor> params;
  std::map<std::string, double> options;
};

// Everything needed to continue optimizing from a checkpoint.
struct OptimizerStateDict {
  // "state.<global param index>.<key>" (the index counts parameters over the groups in order), e.g.
  // "state.3.momentum_buffer", "state.3.exp_avg", "state.3.step" (0-dim float32).
  std::vector<std::pair<std::string, Tensor>> tensors;
  // Each group's options, in order, plus "params": the group's parameter count (checked on load).
  std::vector<std::map<std::string, double>> groups;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient (under NoGradGuard); parameters without one are skipped.
  virtual void step() = 0;
  // Drops the gradients (set_to_none) or zeroes them in place.
  void zero_grad(bool set_to_none = true);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // Options missing from the group take the optimizer's defaults; raises ValueError for an empty group, a
  // parameter already optimized, a non-leaf or non-floating parameter, or invalid options.
  void add_param_group(ParamGroup group);

  double lr(size_t group = 0) const;
  void set_lr(double lr);  // every group

  // What the replicas of a data-parallel job must share, by name: "optimizer" (its kind, e.g. "SGD"), then for
  // each group g "group g params" (the parameter count) and "group g <option>" for every option ("group 0 lr"
  // = "0.05"; values exact, in the shortest form that reads back the same). distributed::check_optimizer_agrees
  // (distributed/consistency.h) compares them across the ranks.
  std::vector<std::pair<std::string, std::string>> settings() const;

  // Virtual so that a sharded optimizer (ZeroRedundancyOptimizer) gives and takes this same layout.
  virtual OptimizerStateDict state_dict() const;
  // Checks group and parameter counts, keys and shapes (errors name the key); copies the state onto the
  // parameters' devices and dtypes and takes the groups' options.
  virtual void load_state_dict(const OptimizerStateDict& state);

  // GradScaler's unscale: divides the gradients the next step() reads by the scale (multiplies by inv_scale) in
  // place and returns whether any of them holds an inf or NaN. Here: every parameter's gradient; a sharded
  // optimizer unscales its shards and returns what all ranks found together.
  virtual bool unscale_gradients_(double inv_scale);

 protected:
  // One parameter's state: named buffers of the parameter's shape and, for optimizers that count them, steps.
  struct ParamState {
    std::map<std::string, Tensor> buffers;
    std::optional<int64_t> step;
  };

  // `name` prefixes error messages ("SGD"); `defaults` holds every option the optimizer reads.
  Optimizer(const char* name, std::map<std::string, double> defaults);
  // Adds the constructor's parameters as the first group.
  void init_params(std::vector<Tensor> params);

  // Raises ValueError naming the option and its value when a group's options are invalid.
  virtual void validate_options(const std::map<std::string, double>& options) const = 0;
  // Buffer names a parameter's state may hold, and those it must hold once it has state under `options`.
  virtual std::vector<std::string> state_buffer_names() const = 0;
  virtual std::vector<std::string> required_buffers(const std::map<std::string, double>& options) const = 0;
  // Whether the state counts steps (exported as "state.<i>.step").
  virtual bool counts_steps() const = 0;

  // The state of `param`, created empty on first use.
  ParamState& state_of(const Tensor& param) { return state_[param.impl()]; }
  static double option(const ParamGroup& group, const std::string& key) { return group.options.at(key); }
  static bool flag(const ParamGroup& group, const std::string& key) { return group.options.at(key) != 0.0; }

  const char* name_;

 private:
  void check_new_param(const Tensor& param) const;
  // Steps flat shards through an inner optimizer and consults its option checks and state names.
  friend class ZeroRedundancyOptimizer;

  std::map<std::string, double> defaults_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

// Shared by the option checks of the optimizers: ValueError "<optimizer>: invalid <what> <value> (<rule>)".
void check_option(bool ok, const char* optimizer, const std::string& what, double value, const char* rule);

}  // namespace syncgrad::optim
