// LossWatch: per-step loss checks without a device synchronisation per step (see loss_watch.h).
#include "tools/train/loss_watch.h"

#include <cmath>
#include <string>

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/join.h"

namespace syncgrad::train {

void LossWatch::add(const Tensor& loss, const LossPosition& where) {
  if (device_.is_cpu()) {
    last_ = loss.item<double>();
    verify(last_, where);
    return;
  }
  pending_.push_back(loss.detach());
  pending_where_.push_back(where);
}

double LossWatch::check() {
  if (pending_.empty()) return last_;
  const Tensor values = raw::to(raw::to(raw::stack(pending_), DType::f64), kCPU);  // (n), one copy
  const double* v = values.data_ptr<double>();
  for (size_t i = 0; i < pending_.size(); ++i) verify(v[i], pending_where_[i]);
  last_ = v[pending_.size() - 1];
  pending_.clear();
  pending_where_.clear();
  return last_;
}

void LossWatch::verify(double value, const LossPosition& where) const {
  SYNCGRAD_CHECK(std::isfinite(value), NonFiniteLossError, "training stopped: the loss became ", std::to_string(value),
                 " at step ", where.step, " (epoch ", where.epoch, ", batch ", where.batch, ") on rank ", rank_,
                 "; lower --lr (now ", std::to_string(lr_), ") or check the input data");
}

}  // namespace syncgrad::train
