// The training loss, watched for NaN and inf. On the CPU each loss is read as it comes. On a GPU reading it would
// make the host wait for the device at every step, so the losses stay on the device until the progress line, a
// checkpoint or the end of the run needs them, and are then read back in one copy; either way the error names
// the exact step, epoch, batch and rank where the loss stopped being finite.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "tensor/device.h"
#include "tensor/errors.h"
#include "tensor/tensor.h"

namespace syncgrad::train {

// Raised when the loss stops being finite; names the step.
class NonFiniteLossError : public Error {
 public:
  using Error::Error;
};

// Where a micro-batch's loss came from (1-based step and epoch; the batch count within the epoch).
struct LossPosition {
  int64_t step = 0;
  int epoch = 0;
  int64_t batch = 0;
};

class LossWatch {
 public:
  // `rank` and `lr` go into the error message.
  LossWatch(Device device, int rank, double lr) : device_(device), rank_(rank), lr_(lr) {}

  // Records a micro-batch's scalar loss; on the CPU checks it at once.
  void add(const Tensor& loss, const LossPosition& where);
  // Checks everything recorded since the last call: NonFiniteLossError for the first non-finite loss. Returns
  // the last loss recorded (NaN before the first).
  double check();

 private:
  void verify(double value, const LossPosition& where) const;

  Device device_;
  int rank_;
  double lr_;
  std::vector<Tensor> pending_;  // losses still on the device, in order
  std::vector<LossPosition> pending_where_;
  double last_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace syncgrad::train
