// Warm-up and cosine annealing of the learning rate (see lr_schedule.h).
#include "tools/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace syncgrad::train {

double lr_at(const TrainConfig& c, int world_size, int64_t step, int64_t total_steps) {
  double peak = c.lr;
  int64_t warmup = 0;
  if (c.scale_lr == LrScaling::kLinear) {
    peak = c.lr * world_size;
    warmup = std::max<int64_t>(0, c.warmup_steps);
    if (step < warmup) return c.lr + (peak - c.lr) * static_cast<double>(step) / static_cast<double>(warmup);
  }
  if (c.lr_schedule != LrSchedule::kCosine || total_steps <= warmup) return peak;
  const double progress = static_cast<double>(step - warmup) / static_cast<double>(total_steps - warmup);
  return peak * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress)));
}

}  // namespace syncgrad::train
