// Host glue of the CUDA loss kernels (loss.cu): result slots for the target scan, read back after the
// kernel (the caller needs the count of valid targets, so these losses wait for the device), and
// registration into kernels::cross_entropy, cross_entropy_backward, nll_loss, nll_loss_backward and one_hot.
#include <limits>

#include "tensor/cuda/loss_kernels.h"
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/loss.h"
#include "tensor/ops/views.h"

namespace syncgrad::cuda {
namespace {

ClassDims class_dims(const Tensor& t) { return {t.sizes()[0], t.sizes()[1], t.sizes()[2]}; }

// Fresh scan slots: no invalid position yet, no valid target counted.
Tensor new_scan(Device device) { return device_int64(device, {std::numeric_limits<int64_t>::max(), 0}); }

// The scan slots as a TargetScan; the offending value is read from `targets` (contiguous int64).
TargetScan finish_scan(const Tensor& scan_slots, const Tensor& targets) {
  const std::vector<int64_t> slots = read_int64(scan_slots);
  TargetScan scan;
  scan.valid = slots[1];
  if (slots[0] != std::numeric_limits<int64_t>::max()) {
    scan.invalid_position = slots[0];
    scan.invalid_value = read_int64(raw::narrow(raw::reshape(targets, {targets.numel()}), 0, slots[0], 1))[0];
  }
  return scan;
}

TargetScan cross_entropy_kernel(const Tensor& losses, const Tensor& lse, const Tensor& logits, const Tensor& target,
                                int64_t ignore_index, double label_smoothing) {
  require_floating("cross_entropy", logits.dtype());
  const Tensor scan = new_scan(logits.device());
  on_device("cross_entropy", logits.device(), [&](cudaStream_t stream) {
    launch_cross_entropy(logits.dtype(), losses.data_ptr(), lse.data_ptr(), logits.data_ptr(),
                         target.data_ptr<int64_t>(), class_dims(logits), ignore_index, label_smoothing,
                         scan.data_ptr<int64_t>(), stream);
  });
  return finish_scan(scan, target);
}

void cross_entropy_backward_kernel(const Tensor& grad_logits, const Tensor& logits, const Tensor& lse,
                                   const Tensor& target, const Tensor& weights, int64_t ignore_index,
                                   double label_smoothing) {
  require_floating("cross_entropy backward", logits.dtype());
  on_device("cross_entropy backward", logits.device(), [&](cudaStream_t stream) {
    launch_cross_entropy_backward(logits.dtype(), grad_logits.data_ptr(), logits.data_ptr(), lse.data_ptr(),
                                  target.data_ptr<int64_t>(), weights.data_ptr(), class_dims(logits), ignore_index,
                                  label_smoothing, stream);
  });
}

TargetScan nll_loss_kernel(const Tensor& losses, const Tensor& log_probs, const Tensor& target, int64_t ignore_index) {
  require_floating("nll_loss", log_probs.dtype());
  const Tensor scan = new_scan(log_probs.device());
  on_device("nll_loss", log_probs.device(), [&](cudaStream_t stream) {
    launch_nll_loss(log_probs.dtype(), losses.data_ptr(), log_probs.data_ptr(), target.data_ptr<int64_t>(),
                    class_dims(log_probs), ignore_index, scan.data_ptr<int64_t>(), stream);
  });
  return finish_scan(scan, target);
}

void nll_loss_backward_kernel(const Tensor& grad_in, const Tensor& weights, const Tensor& target,
                              int64_t ignore_index) {
  require_floating("nll_loss backward", grad_in.dtype());
  on_device("nll_loss backward", grad_in.device(), [&](cudaStream_t stream) {
    launch_nll_loss_backward(grad_in.dtype(), grad_in.data_ptr(), weights.data_ptr(), target.data_ptr<int64_t>(),
                             class_dims(grad_in), ignore_index, stream);
  });
}

TargetScan one_hot_kernel(const Tensor& out, const Tensor& indices) {
  const Tensor scan = new_scan(out.device());
  on_device("one_hot", out.device(), [&](cudaStream_t stream) {
    launch_one_hot(out.data_ptr<int64_t>(), indices.data_ptr<int64_t>(), indices.numel(), out.sizes().back(),
                   scan.data_ptr<int64_t>(), stream);
  });
  return finish_scan(scan, indices);
}

}  // namespace

void register_loss_kernels() {
  kernels::cross_entropy.set(DeviceType::kCUDA, &cross_entropy_kernel);
  kernels::cross_entropy_backward.set(DeviceType::kCUDA, &cross_entropy_backward_kernel);
  kernels::nll_loss.set(DeviceType::kCUDA, &nll_loss_kernel);
  kernels::nll_loss_backward.set(DeviceType::kCUDA, &nll_loss_backward_kernel);
  kernels::one_hot.set(DeviceType::kCUDA, &one_hot_kernel);
}

}  // namespace syncgrad::cuda
