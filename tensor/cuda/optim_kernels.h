// Launchers of the fused optimizer kernels (optim.cu), called by optim_ops.cpp: SGD and Adam/AdamW steps over
// strided operands (one pass, no temporaries; tensor/ops/optim_step.h's algorithms) and the unscale-and-check
// pass of the gradient scaler. The coefficients arrive precomputed in double, as the CPU kernels derive them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/cuda/launch.h"
#include "tensor/dtype.h"

namespace syncgrad::cuda {

struct SgdCoefficients {
  double lr = 0, momentum = 0, keep = 1, weight_decay = 0, sign = 1;  // keep = 1 - dampening
  bool use_momentum = false, first_step = false, nesterov = false;
};

// p -= lr * g' with g' from tensor/ops/optim_step.h. Operands: param, grad, momentum buffer (the buffer is
// ignored without momentum).
void launch_sgd_step(DType dtype, void* param, const void* grad, void* buffer, const SgdCoefficients& c,
                     const Geometry<3>& g, cudaStream_t stream);

struct AdamCoefficients {
  double step_size = 0;              // lr / (1 - beta1^step)
  double bias_correction2_sqrt = 1;  // sqrt(1 - beta2^step)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, sign = 1;
  double l2 = 0;      // Adam's weight decay, added to the gradient
  double shrink = 1;  // AdamW's 1 - lr * weight_decay, applied to the parameter
  bool amsgrad = false;
};

// Operands: param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (the last ignored without amsgrad).
void launch_adam_step(DType dtype, void* param, const void* grad, void* exp_avg, void* exp_avg_sq, void* max_exp_avg_sq,
                      const AdamCoefficients& c, const Geometry<5>& g, cudaStream_t stream);

// grad (contiguous, n elements) *= inv_scale; *found_inf = 1 when an element was inf or NaN before scaling.
void launch_unscale_and_check(DType dtype, void* grad, int64_t n, double inv_scale, float* found_inf,
                              cudaStream_t stream);

}  // namespace syncgrad::cuda
