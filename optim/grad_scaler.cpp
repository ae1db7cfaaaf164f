// GradScaler: option checks, the per-optimizer bookkeeping of one iteration (unscaled? stepped? found
// inf/NaN?), the scale's backoff and growth, and its state dict.
#include "optim/grad_scaler.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/views.h"
#include "tensor/check.h"

namespace syncgrad::optim {
namespace {

void check_scaler_option(bool ok, const std::string& what, double value, const char* rule) {
  SYNCGRAD_CHECK(ok, ValueError, "GradScaler: invalid ", what, " ", std::to_string(value), " (", rule, ")");
}

void check_options(double scale, double growth_factor, double backoff_factor, double growth_interval) {
  check_scaler_option(std::isfinite(scale) && scale > 0, "scale", scale, "must be finite and > 0");
  check_scaler_option(growth_factor > 1.0, "growth_factor", growth_factor, "must be > 1");
  check_scaler_option(backoff_factor > 0.0 && backoff_factor < 1.0, "backoff_factor", backoff_factor,
                      "must be in (0, 1)");
  check_scaler_option(growth_interval >= 1 && growth_interval == std::floor(growth_interval), "growth_interval",
                      growth_interval, "must be a positive integer");
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale) {
  check_options(options.init_scale, options.growth_factor, options.backoff_factor,
                static_cast<double>(options.growth_interval));
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!options_.enabled) return loss;
  SYNCGRAD_CHECK(is_floating(loss.dtype()), DTypeError, "GradScaler.scale: the loss has dtype ",
                 dtype_name(loss.dtype()), "; scale a floating-point loss");
  const bool half = loss.dtype() == DType::f16 || loss.dtype() == DType::bf16;
  return mul(half ? to(loss, DType::f32) : loss, Scalar(scale_));
}

void GradScaler::unscale_(Optimizer& optimizer) {
  if (!options_.enabled) return;
  OptimizerState& state = per_optimizer_[&optimizer];
  SYNCGRAD_CHECK(!state.unscaled, ValueError,
                 "GradScaler.unscale_: already called for this optimizer since the last update(); call it at most once "
                 "per optimizer and iteration");
  SYNCGRAD_CHECK(!state.stepped, ValueError,
                 "GradScaler.unscale_: called after step() for this optimizer; unscale before stepping");
  if (optimizer.unscale_gradients_(1.0 / scale_)) state.found_inf = true;
  state.unscaled = true;
}

bool GradScaler::step(Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  SYNCGRAD_CHECK(
      !per_optimizer_[&optimizer].stepped, ValueError,
      "GradScaler.step: already called for this optimizer since the last update(); call update() once per iteration");
  if (!per_optimizer_[&optimizer].unscaled) unscale_(optimizer);
  OptimizerState& state = per_optimizer_[&optimizer];
  state.stepped = true;
  if (state.found_inf) {
    ++skipped_steps_;
    return false;
  }
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  bool checked = false, found_inf = false;
  for (const auto& [optimizer, state] : per_optimizer_) {
    checked = checked || state.unscaled;
    found_inf = found_inf || state.found_inf;
  }
  SYNCGRAD_CHECK(checked, ValueError,
                 "GradScaler.update: no gradients were checked for inf/NaN in this iteration; call step(optimizer) (or "
                 "unscale_) before update()");
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == options_.growth_interval) {
    const double grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  }
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  check_scaler_option(std::isfinite(new_scale) && new_scale > 0, "scale", new_scale, "must be finite and > 0");
  scale_ = new_scale;
  per_optimizer_.clear();
}

std::map<std::string, double> GradScaler::state_dict() const {
  if (!options_.enabled) return {};
  return {{"scale", scale_},
          {"growth_factor", options_.growth_factor},
          {"backoff_factor", options_.backoff_factor},
          {"growth_interval", static_cast<double>(options_.growth_interval)},
          {"_growth_tracker", static_cast<double>(growth_tracker_)},
          {"skipped_steps", static_cast<double>(skipped_steps_)}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& state) {
  if (!options_.enabled) return;
  SYNCGRAD_CHECK(!state.empty(), ValueError,
                 "GradScaler.load_state_dict: the state is empty (saved from a disabled GradScaler?)");
  auto get = [&](const char* key) {
    auto it = state.find(key);
    SYNCGRAD_CHECK(it != state.end(), ValueError, "GradScaler.load_state_dict: missing key '", key, "'");
    return it->second;
  };
  const double scale = get("scale"), growth = get("growth_factor"), backoff = get("backoff_factor");
  const double interval = get("growth_interval"), tracker = get("_growth_tracker");
  check_options(scale, growth, backoff, interval);
  check_scaler_option(tracker >= 0 && tracker == std::floor(tracker), "_growth_tracker", tracker,
                      "must be a non-negative integer");
  scale_ = scale;
  options_.growth_factor = growth;
  options_.backoff_factor = backoff;
  options_.growth_interval = static_cast<int64_t>(interval);
  growth_tracker_ = static_cast<int64_t>(tracker);
  auto skipped = state.find("skipped_steps");
  skipped_steps_ = skipped == state.end() ? 0 : static_cast<int64_t>(skipped->second);
  per_optimizer_.clear();
}

}  // namespace syncgrad::optim
