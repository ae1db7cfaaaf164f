// Raw fused optimizer updates: one pass over a parameter, its gradient and its state buffers per step, with
// no temporaries (PyTorch's SGD and Adam/AdamW update rules). The optimizers in optim/ call these; the CUDA
// backend fills the same kernel slots.
#pragma once

#include <cstdint>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

// One SGD step (PyTorch's algorithm):
//   g = maximize ? -grad : grad;  g += weight_decay * p
//   momentum != 0:  buf = first_step ? g : momentum * buf + (1 - dampening) * g
//                   g = nesterov ? g + momentum * buf : buf
//   p -= lr * g
struct SGDStepArgs {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
  bool first_step = false;  // the momentum buffer holds no history yet: it is overwritten with g
};

// One Adam / AdamW step (PyTorch's algorithm), `step` counting from 1:
//   g = maximize ? -grad : grad
//   decoupled (AdamW): p *= 1 - lr * weight_decay      else (Adam): g += weight_decay * p
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   amsgrad: v_max = max(v_max, v), used in place of v below
//   p -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
struct AdamStepArgs {
  double lr = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;
  bool amsgrad = false;
  bool maximize = false;
  int64_t step = 1;
};

namespace kernels {
// param, grad and momentum_buffer: one shape, floating dtype and device (any strides); momentum_buffer is
// undefined when args.momentum == 0. Updates param (and the buffer) in place.
extern KernelSlot<void(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                       const SGDStepArgs& args)>
    sgd_step;
// param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq: one shape, floating dtype and device (any strides);
// max_exp_avg_sq is undefined unless args.amsgrad. Updates param and the buffers in place.
extern KernelSlot<void(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                       const Tensor& max_exp_avg_sq, const AdamStepArgs& args)>
    adam_step;
}  // namespace kernels

namespace raw {
// Check the operands (ShapeError / DTypeError / DeviceError / ValueError naming the op and the operand),
// run the kernel and bump the versions of everything written.
void sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SGDStepArgs& args);
void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& args);
}  // namespace raw

}  // namespace syncgrad
