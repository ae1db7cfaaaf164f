// Learning-rate schedulers (PyTorch's closed forms): each sets every group's lr from the group's initial lr
// and the epoch count. Construction applies epoch 0; step() advances one epoch.
//   StepLR             lr = base * gamma^floor(epoch / step_size)
//   CosineAnnealingLR  lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2
//   LinearLR           lr = base * (start + (end - start) * min(epoch, total_iters) / total_iters)
//   SequentialLR       scheduler i runs from milestone i-1 (its epoch counted from there)
//   WarmupCosineLR     LinearLR warmup for warmup_iters, then cosine annealing to eta_min at total_iters
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace syncgrad::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one epoch and sets each group's lr.
  void step();
  // The lrs set by the last step (or the construction), one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return optimizer_; }

  // The lr of a group whose initial lr is `base_lr` at `epoch` (>= 0).
  virtual double lr_at(double base_lr, int64_t epoch) const = 0;

  // {"last_epoch", "base_lr.<group>"...}; loading sets the groups' lrs for the loaded epoch.
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& state);

 protected:
  // Records each group's initial lr (the "initial_lr" option, set from "lr" by the first scheduler).
  explicit LRScheduler(Optimizer& optimizer);
  // Sets the lrs of epoch 0; derived constructors call it last.
  void start();

 private:
  void apply();

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = 0;
};

class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(double base_lr, int64_t epoch) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);
  double lr_at(double base_lr, int64_t epoch) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3.0, double end_factor = 1.0, int64_t total_iters = 5);
  double lr_at(double base_lr, int64_t epoch) const override;

 private:
  double start_factor_;
  double end_factor_;
  int64_t total_iters_;
};

// Runs schedulers[i] from milestones[i-1] on (milestones strictly increasing, one fewer than schedulers, all
// schedulers on this optimizer).
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  double lr_at(double base_lr, int64_t epoch) const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// Linear warmup from warmup_start_factor * base to base over warmup_iters epochs, then cosine annealing to
// eta_min, reached at total_iters: SequentialLR(LinearLR(start, 1, warmup_iters),
// CosineAnnealingLR(total_iters - warmup_iters, eta_min), {warmup_iters}).
class WarmupCosineLR : public SequentialLR {
 public:
  WarmupCosineLR(Optimizer& optimizer, int64_t warmup_iters, int64_t total_iters, double warmup_start_factor = 1e-3,
                 double eta_min = 0);
};

}  // namespace syncgrad::optim
