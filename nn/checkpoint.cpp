// nn::checkpoint: the no-grad forward, the CheckpointBackward node and its recomputation.
#include "nn/checkpoint.h"

#include <algorithm>
#include <array>
#include <memory>

#include "autograd/autocast.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/node.h"
#include "tensor/check.h"

namespace syncgrad::nn {
namespace {

thread_local int recompute_depth = 0;

struct RecomputeScope {
  RecomputeScope() { ++recompute_depth; }
  ~RecomputeScope() { --recompute_depth; }
  RecomputeScope(const RecomputeScope&) = delete;
  RecomputeScope& operator=(const RecomputeScope&) = delete;
};

// A generator's state at one moment, to be put back later.
struct GeneratorState {
  Generator* generator;
  uint64_t seed, offset;
  void restore() const { generator->set_state(seed, offset); }
};

std::vector<GeneratorState> capture(const std::vector<Generator*>& generators) {
  std::vector<GeneratorState> states;
  for (Generator* g : generators) states.push_back({g, g->seed(), g->offset()});
  return states;
}

// Puts the states back when the scope ends (the recomputation must not move the generators).
struct GeneratorsRestorer {
  std::vector<GeneratorState> states;
  ~GeneratorsRestorer() {
    for (const GeneratorState& s : states) s.restore();
  }
};

struct AutocastState {
  bool enabled;
  DType dtype;
};
constexpr std::array<DeviceType, 2> kAutocastDevices = {DeviceType::kCPU, DeviceType::kCUDA};

class CheckpointBackward final : public autograd::NamedNode<"CheckpointBackward"> {
 public:
  CheckpointBackward(CheckpointFunction fn, const std::vector<Tensor>& inputs, std::vector<GeneratorState> rng)
      : fn_(std::move(fn)), rng_(std::move(rng)) {
    for (const Tensor& input : inputs) {
      saved_.emplace_back(input);
      wants_grad_.push_back(input.defined() && input.requires_grad());
    }
    for (size_t d = 0; d < kAutocastDevices.size(); ++d) {
      autocast_[d] = {is_autocast_enabled(kAutocastDevices[d]), autocast_dtype(kAutocastDevices[d])};
    }
  }

  autograd::GradList apply(autograd::GradList&& grads) override {
    check_not_released();
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < saved_.size(); ++i) {
      Tensor input = saved_[i].defined() ? saved_[i].get(*this).detach() : Tensor();
      if (wants_grad_[i]) input.requires_grad_(true);
      inputs.push_back(std::move(input));
    }
    std::vector<Tensor> outputs = recompute(inputs);
    std::vector<Tensor> roots, root_grads;
    for (size_t i = 0; i < outputs.size() && i < grads.size(); ++i) {
      if (grads[i].defined() && outputs[i].defined() && outputs[i].requires_grad()) {
        roots.push_back(outputs[i]);
        root_grads.push_back(grads[i]);
      }
    }
    if (!roots.empty()) autograd::backward(roots, root_grads);
    autograd::GradList input_grads;
    for (size_t i = 0; i < inputs.size(); ++i) input_grads.push_back(wants_grad_[i] ? inputs[i].grad() : Tensor());
    return input_grads;
  }

 private:
  // fn again, with the random generators and autocast as they were in the forward, and gradients on.
  std::vector<Tensor> recompute(const std::vector<Tensor>& inputs) {
    std::vector<Generator*> generators;
    for (const GeneratorState& s : rng_) generators.push_back(s.generator);
    GeneratorsRestorer restorer{capture(generators)};
    for (const GeneratorState& s : rng_) s.restore();
    AutocastGuard cpu_autocast(kAutocastDevices[0], autocast_[0].dtype, autocast_[0].enabled);
    AutocastGuard cuda_autocast(kAutocastDevices[1], autocast_[1].dtype, autocast_[1].enabled);
    RecomputeScope recomputing;
    EnableGradGuard grad_on;
    std::vector<Tensor> outputs = fn_(inputs);
    SYNCGRAD_CHECK(outputs.size() == num_outputs(), AutogradError, "checkpoint: the recomputation returned ",
                   outputs.size(), " tensors, the forward ", num_outputs(),
                   "; the checkpointed function must compute the same thing twice");
    return outputs;
  }

  void release_saved() override {
    saved_.clear();
    fn_ = nullptr;
  }

  CheckpointFunction fn_;
  std::vector<GeneratorState> rng_;
  std::vector<autograd::SavedTensor> saved_;
  std::vector<bool> wants_grad_;
  std::array<AutocastState, kAutocastDevices.size()> autocast_{};
};

}  // namespace

std::vector<Tensor> checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs,
                               const CheckpointOptions& options) {
  SYNCGRAD_CHECK(static_cast<bool>(fn), ValueError, "checkpoint: the function to checkpoint is empty");
  if (!autograd::GradMode::is_enabled()) return fn(inputs);
  std::vector<Generator*> generators{&default_generator()};
  for (Generator* g : options.generators) {
    SYNCGRAD_CHECK(g != nullptr, ValueError, "checkpoint: CheckpointOptions::generators holds a null generator");
    if (std::find(generators.begin(), generators.end(), g) == generators.end()) generators.push_back(g);
  }
  auto node = std::make_shared<CheckpointBackward>(fn, inputs, capture(generators));
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;
    outputs = fn(inputs);
  }
  SYNCGRAD_CHECK(!outputs.empty(), ValueError, "checkpoint: the checkpointed function returned no tensor");
  for (size_t i = 0; i < outputs.size(); ++i) {
    SYNCGRAD_CHECK(outputs[i].defined(), ValueError, "checkpoint: output ", i,
                   " of the checkpointed function is an undefined tensor");
    // A fresh tensor object over the same data, so that history is never attached to one of the inputs.
    outputs[i] = outputs[i].detach();
  }
  autograd::collect_next_edges(*node, inputs);
  node->set_num_outputs(static_cast<uint32_t>(outputs.size()));
  for (uint32_t i = 0; i < outputs.size(); ++i) {  // non-floating outputs get no gradient
    if (is_floating(outputs[i].dtype())) autograd::set_history(outputs[i], node, i);
  }
  return outputs;
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  const CheckpointOptions& options) {
  SYNCGRAD_CHECK(static_cast<bool>(fn), ValueError, "checkpoint: the function to checkpoint is empty");
  return checkpoint([fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in[0])}; },
                    std::vector<Tensor>{input}, options)[0];
}

Tensor checkpoint(Module& module, const Tensor& input, const CheckpointOptions& options) {
  return checkpoint([&module](const Tensor& x) { return module.forward(x); }, input, options);
}

bool in_checkpoint_recompute() { return recompute_depth > 0; }

}  // namespace syncgrad::nn
