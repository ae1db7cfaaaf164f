// GradientClock: timestamps from post-accumulate hooks, medians per parameter.
#include "bench/scaling/gradient_clock.h"

#include <algorithm>

#include "bench/scaling/step_record.h"

namespace syncgrad::bench {

GradientClock::GradientClock(const nn::StateDict& parameters) : state_(std::make_shared<State>()) {
  state_->ready.resize(parameters.size());
  history_.resize(parameters.size());
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Tensor& p = parameters[i].second;
    bytes_.push_back(static_cast<double>(p.nbytes()));
    numel_.push_back(p.numel());
    std::weak_ptr<State> weak = state_;
    p.register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (auto state = weak.lock()) state->ready[i] = Clock::now();
    });
  }
}

void GradientClock::start() { state_->start = Clock::now(); }

void GradientClock::record() {
  for (size_t i = 0; i < history_.size(); ++i) {
    history_[i].push_back(std::chrono::duration<double>(state_->ready[i] - state_->start).count());
  }
}

std::vector<GradientReady> GradientClock::profile() const {
  std::vector<GradientReady> gradients;
  for (size_t i = 0; i < history_.size(); ++i) gradients.push_back({median(history_[i]), numel_[i], bytes_[i]});
  std::stable_sort(gradients.begin(), gradients.end(),
                   [](const GradientReady& a, const GradientReady& b) { return a.ready_seconds < b.ready_seconds; });
  return gradients;
}

}  // namespace syncgrad::bench
