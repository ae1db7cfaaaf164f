// GradScaler: dynamic loss scaling for float16 mixed-precision training (PyTorch's torch.cuda.amp.GradScaler,
// same defaults). The loss is multiplied by the scale before backward so small float16 gradients do not flush
// to zero; step() divides the gradients by the scale again and skips the optimizer step when any of them is
// inf or NaN; update() then halves the scale (backoff), or doubles it (growth) after growth_interval steps in
// a row without one. Parameters and optimizer state stay float32: a float16 gradient is refused.
//   GradScaler scaler;
//   scaler.scale(loss).backward();
//   scaler.unscale_(optimizer);            // optional: only to clip or inspect the true gradients
//   clip_grad_norm_(params, 1.0);
//   scaler.step(optimizer);                // skipped when a gradient is inf/NaN
//   scaler.update();
// Under DistributedDataParallel the gradients are averaged across ranks before step() looks at them, so
// every rank finds the same inf/NaN and makes the same skip decision.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

#include "optim/optimizer.h"
#include "tensor/tensor.h"

namespace syncgrad::optim {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  // Disabled: scale() returns the loss, step() just steps, update() does nothing (e.g. for bfloat16).
  bool enabled = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale (differentiable); a float16/bfloat16 loss is scaled in float32 (so it cannot overflow).
  Tensor scale(const Tensor& loss) const;
  // Divides the gradients of `optimizer`'s parameters by the scale in place (one pass per gradient, which
  // also looks for inf/NaN). At most once per optimizer between update() calls.
  void unscale_(Optimizer& optimizer);
  // Unscales (unless unscale_ already did) and runs optimizer.step() unless a gradient is inf or NaN.
  // Returns whether the step ran.
  bool step(Optimizer& optimizer);
  // Adjusts the scale from what this iteration's steps found, and starts the next iteration.
  void update();
  // Sets the scale directly (the growth tracker is kept) and starts the next iteration.
  void update(double new_scale);

  bool is_enabled() const { return options_.enabled; }
  double get_scale() const { return scale_; }
  int64_t growth_tracker() const { return growth_tracker_; }
  // Optimizer steps skipped because of inf/NaN gradients since construction (or the loaded state).
  int64_t skipped_steps() const { return skipped_steps_; }

  // PyTorch's keys: "scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"; plus
  // "skipped_steps". Empty when disabled.
  std::map<std::string, double> state_dict() const;
  // Takes every key above ("skipped_steps" optional); raises ValueError naming a missing key or a bad value.
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  // Per optimizer, for the current iteration.
  struct OptimizerState {
    bool unscaled = false;
    bool stepped = false;
    bool found_inf = false;
  };

  GradScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  int64_t skipped_steps_ = 0;
  std::unordered_map<const Optimizer*, OptimizerState> per_optimizer_;
};

}  // namespace syncgrad::optim
