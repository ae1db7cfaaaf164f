// Fused optimizer update front-ends: operand checks, dispatch, version bumps.
#include "tensor/ops/optim_step.h"

#include <cmath>
#include <string>

#include "tensor/check.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const SGDStepArgs&)> sgd_step("sgd_step");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const AdamStepArgs&)>
    adam_step("adam_step");
}  // namespace kernels

namespace {

// The parameter must be a floating tensor whose elements each own their memory (it is written in place).
void check_param(const char* op, const Tensor& param) {
  SYNCGRAD_CHECK(param.defined(), ValueError, op, ": the parameter is an undefined tensor");
  SYNCGRAD_CHECK(is_floating(param.dtype()), DTypeError, op, ": parameter has dtype ", dtype_name(param.dtype()),
                 "; optimizers update floating tensors only (float32, float64, float16, bfloat16)");
  for (int64_t d = 0; d < param.dim(); ++d) {
    SYNCGRAD_CHECK(param.sizes()[d] <= 1 || param.strides()[d] != 0, ValueError, op, ": the parameter of shape ",
                   shape_str(param.sizes()), " has several elements in one memory location (stride 0 on dim ", d,
                   "); optimize a tensor that owns its elements (.clone() it)");
  }
}

// `operand` (named `what`) must match the parameter's shape, dtype and device.
void check_operand(const char* op, const char* what, const Tensor& param, const Tensor& operand) {
  SYNCGRAD_CHECK(operand.defined(), ValueError, op, ": ", what,
                 " is an undefined tensor; it is required with these options");
  SYNCGRAD_CHECK(operand.sizes() == param.sizes(), ShapeError, op, ": ", what, " has shape ",
                 shape_str(operand.sizes()), " but the parameter has shape ", shape_str(param.sizes()),
                 "; optimizer state must have the parameter's shape");
  SYNCGRAD_CHECK(operand.dtype() == param.dtype(), DTypeError, op, ": ", what, " has dtype ",
                 dtype_name(operand.dtype()), " but the parameter has dtype ", dtype_name(param.dtype()),
                 "; convert it with .to() to the parameter's dtype");
  check_same_device(op, param, operand);
}

void check_finite_non_negative(const char* op, const char* name, double value) {
  SYNCGRAD_CHECK(value >= 0.0 && !std::isinf(value), ValueError, op, ": ", name, " = ", std::to_string(value),
                 " is invalid; it must be a finite value >= 0");
}

void bump(const Tensor& t) {
  if (t.defined()) t.impl()->storage()->bump_version();
}

}  // namespace

namespace raw {

void sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SGDStepArgs& args) {
  const char* op = "sgd_step_";
  check_param(op, param);
  check_operand(op, "grad", param, grad);
  check_finite_non_negative(op, "lr", args.lr);
  check_finite_non_negative(op, "momentum", args.momentum);
  check_finite_non_negative(op, "weight_decay", args.weight_decay);
  if (args.momentum != 0.0) check_operand(op, "momentum_buffer", param, momentum_buffer);
  SYNCGRAD_CHECK(!args.nesterov || (args.momentum != 0.0 && args.dampening == 0.0), ValueError, op,
                 ": nesterov needs momentum > 0 and dampening = 0 (got momentum = ", std::to_string(args.momentum),
                 ", dampening = ", std::to_string(args.dampening), ")");
  const Tensor buffer = args.momentum != 0.0 ? momentum_buffer : Tensor();
  kernels::sgd_step(param.device(), param, grad, buffer, args);
  bump(param);
  bump(buffer);
}

void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& args) {
  const char* op = "adam_step_";
  check_param(op, param);
  check_operand(op, "grad", param, grad);
  check_operand(op, "exp_avg", param, exp_avg);
  check_operand(op, "exp_avg_sq", param, exp_avg_sq);
  if (args.amsgrad) check_operand(op, "max_exp_avg_sq", param, max_exp_avg_sq);
  check_finite_non_negative(op, "lr", args.lr);
  check_finite_non_negative(op, "eps", args.eps);
  check_finite_non_negative(op, "weight_decay", args.weight_decay);
  SYNCGRAD_CHECK(args.beta1 >= 0.0 && args.beta1 < 1.0 && args.beta2 >= 0.0 && args.beta2 < 1.0, ValueError, op,
                 ": betas (", std::to_string(args.beta1), ", ", std::to_string(args.beta2),
                 ") are invalid; each must be in [0, 1)");
  SYNCGRAD_CHECK(args.step >= 1, ValueError, op, ": step = ", args.step,
                 " is invalid; steps count from 1 (bias correction divides by 1 - beta^step)");
  const Tensor max_sq = args.amsgrad ? max_exp_avg_sq : Tensor();
  kernels::adam_step(param.device(), param, grad, exp_avg, exp_avg_sq, max_sq, args);
  bump(param);
  bump(exp_avg);
  bump(exp_avg_sq);
  bump(max_sq);
}

}  // namespace raw
}  // namespace syncgrad
