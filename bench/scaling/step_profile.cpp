// StepProfile's derived figures.
#include "bench/scaling/step_profile.h"

#include <algorithm>

namespace syncgrad::bench {

double StepProfile::ddp_compute_seconds() const {
  return data_seconds + forward_seconds + loss_seconds + ddp_backward_seconds + hook_finish_seconds + optimizer_seconds;
}

double StepProfile::gradient_bytes() const {
  double total = 0;
  for (const GradientReady& g : gradients) total += g.bytes;
  return total;
}

double StepProfile::last_ready_seconds() const {
  double last = 0;
  for (const GradientReady& g : gradients) last = std::max(last, g.ready_seconds);
  return last;
}

}  // namespace syncgrad::bench
