// Host glue of the CUDA optimizer kernels (optim.cu): the step coefficients computed in double as the CPU
// kernels compute them, the strided pieces of the operands, and registration into kernels::sgd_step,
// adam_step and unscale_and_check.
#include <cmath>

#include "tensor/cuda/op_support.h"
#include "tensor/cuda/optim_kernels.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/grad_scale.h"
#include "tensor/ops/optim_step.h"

namespace syncgrad::cuda {
namespace {

void sgd_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& buffer, const SGDStepArgs& args) {
  require_floating("sgd_step", param.dtype());
  SgdCoefficients c;
  c.lr = args.lr;
  c.momentum = args.momentum;
  c.keep = 1.0 - args.dampening;
  c.weight_decay = args.weight_decay;
  c.sign = args.maximize ? -1.0 : 1.0;
  c.use_momentum = args.momentum != 0.0;
  c.first_step = args.first_step;
  c.nesterov = args.nesterov;
  // Without momentum the third operand is only a placeholder of the right shape.
  const Tensor& third = c.use_momentum ? buffer : grad;
  for_each_piece<3>("sgd_step", {&param, &grad, &third},
                    [&](const std::array<char*, 3>& p, const Geometry<3>& g, cudaStream_t s) {
                      launch_sgd_step(param.dtype(), p[0], p[1], c.use_momentum ? p[2] : nullptr, c, g, s);
                    });
}

void adam_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                      const Tensor& max_exp_avg_sq, const AdamStepArgs& args) {
  require_floating("adam_step", param.dtype());
  const double step = static_cast<double>(args.step);
  AdamCoefficients c;
  c.step_size = args.lr / (1.0 - std::pow(args.beta1, step));
  c.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(args.beta2, step));
  c.beta1 = args.beta1;
  c.beta2 = args.beta2;
  c.eps = args.eps;
  c.sign = args.maximize ? -1.0 : 1.0;
  // Adam adds weight_decay * p to the gradient; AdamW shrinks p by (1 - lr * weight_decay) instead.
  c.l2 = args.decoupled_weight_decay ? 0.0 : args.weight_decay;
  c.shrink = args.decoupled_weight_decay ? 1.0 - args.lr * args.weight_decay : 1.0;
  c.amsgrad = args.amsgrad;
  const Tensor& fifth = args.amsgrad ? max_exp_avg_sq : exp_avg_sq;
  for_each_piece<5>("adam_step", {&param, &grad, &exp_avg, &exp_avg_sq, &fifth},
                    [&](const std::array<char*, 5>& p, const Geometry<5>& g, cudaStream_t s) {
                      launch_adam_step(param.dtype(), p[0], p[1], p[2], p[3], args.amsgrad ? p[4] : nullptr, c, g, s);
                    });
}

void unscale_and_check_kernel(const Tensor& grad, const Tensor& found_inf, double inv_scale) {
  require_floating("unscale_grads_", grad.dtype());
  on_device("unscale_grads_", grad.device(), [&](cudaStream_t stream) {
    launch_unscale_and_check(grad.dtype(), grad.data_ptr(), grad.numel(), inv_scale, found_inf.data_ptr<float>(),
                             stream);
  });
}

}  // namespace

void register_optim_kernels() {
  kernels::sgd_step.set(DeviceType::kCUDA, &sgd_step_kernel);
  kernels::adam_step.set(DeviceType::kCUDA, &adam_step_kernel);
  kernels::unscale_and_check.set(DeviceType::kCUDA, &unscale_and_check_kernel);
}

}  // namespace syncgrad::cuda
