// CUDA fused optimizer kernels: SGD (momentum, dampening, nesterov, weight decay, maximize) and Adam/AdamW
// (amsgrad) updating the parameter and its state in one pass over strided operands, and the gradient
// unscale-and-check of mixed precision; half types compute in float and store back in their own type, with
// the CPU kernels' formulas (tensor/cpu/{optim_step,grad_scale}.cpp).
#include <cstdint>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/optim_kernels.h"
#include "tensor/cuda/parallel.cuh"

namespace syncgrad::cuda {
namespace {

template <class T>
void sgd_typed(T* param, const T* grad, T* buffer, const SgdCoefficients& c, const Geometry<3>& g,
               cudaStream_t stream) {
  using M = opmath_t<T>;
  const M lr = static_cast<M>(c.lr), momentum = static_cast<M>(c.momentum), keep = static_cast<M>(c.keep);
  const M weight_decay = static_cast<M>(c.weight_decay), sign = static_cast<M>(c.sign);
  const bool use_momentum = c.use_momentum, first_step = c.first_step, nesterov = c.nesterov;
  for_each_offset<3>(g, stream, [=] SG_LAMBDA(const Offsets<3>& o) {
    T& p = param[o.at[0]];
    const M pv = static_cast<M>(op_value(p));
    const M d = sign * static_cast<M>(op_value(grad[o.at[1]])) + weight_decay * pv;
    if (!use_momentum) {
      p = convert<T>(pv - lr * d);
      return;
    }
    T& b = buffer[o.at[2]];
    const M buf = first_step ? d : momentum * static_cast<M>(op_value(b)) + keep * d;
    b = convert<T>(buf);
    const M update = nesterov ? d + momentum * buf : buf;
    p = convert<T>(pv - lr * update);
  });
}

template <class T>
void adam_typed(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, const AdamCoefficients& c,
                const Geometry<5>& g, cudaStream_t stream) {
  using M = opmath_t<T>;
  const M step_size = static_cast<M>(c.step_size), correction2 = static_cast<M>(c.bias_correction2_sqrt);
  const M beta1 = static_cast<M>(c.beta1), beta2 = static_cast<M>(c.beta2);
  const M one_minus_beta1 = static_cast<M>(1.0 - c.beta1), one_minus_beta2 = static_cast<M>(1.0 - c.beta2);
  const M eps = static_cast<M>(c.eps), sign = static_cast<M>(c.sign), l2 = static_cast<M>(c.l2);
  const M shrink = static_cast<M>(c.shrink);
  const bool amsgrad = c.amsgrad;
  for_each_offset<5>(g, stream, [=] SG_LAMBDA(const Offsets<5>& o) {
    T& p = param[o.at[0]];
    T& m = exp_avg[o.at[2]];
    T& v = exp_avg_sq[o.at[3]];
    const M pv = static_cast<M>(op_value(p));
    const M gv = sign * static_cast<M>(op_value(grad[o.at[1]])) + l2 * pv;
    const M mv = beta1 * static_cast<M>(op_value(m)) + one_minus_beta1 * gv;
    const M vv = beta2 * static_cast<M>(op_value(v)) + one_minus_beta2 * gv * gv;
    m = convert<T>(mv);
    v = convert<T>(vv);
    M second = vv;
    if (amsgrad) {
      T& v_max = max_exp_avg_sq[o.at[4]];
      const M previous = static_cast<M>(op_value(v_max));
      second = vv > previous ? vv : previous;
      v_max = convert<T>(second);
    }
    p = convert<T>(pv * shrink - step_size * mv / (dmath::sqrt(second) / correction2 + eps));
  });
}

template <class T>
void unscale_typed(T* grad, int64_t n, double inv_scale, float* found_inf, cudaStream_t stream) {
  using M = opmath_t<T>;
  const M inv = static_cast<M>(inv_scale);
  for_each_index(n, stream, [=] SG_LAMBDA(int64_t i) {
    const M v = static_cast<M>(op_value(grad[i]));
    // v - v is 0 for finite v and NaN otherwise; every writer stores the same 1.
    if ((v - v) != M(0)) *found_inf = 1.0f;
    grad[i] = convert<T>(v * inv);
  });
}

}  // namespace

void launch_sgd_step(DType dtype, void* param, const void* grad, void* buffer, const SgdCoefficients& c,
                     const Geometry<3>& g, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    sgd_typed<T>(static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(buffer), c, g, stream);
  });
}

void launch_adam_step(DType dtype, void* param, const void* grad, void* exp_avg, void* exp_avg_sq, void* max_exp_avg_sq,
                      const AdamCoefficients& c, const Geometry<5>& g, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    adam_typed<T>(static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(exp_avg),
                  static_cast<T*>(exp_avg_sq), static_cast<T*>(max_exp_avg_sq), c, g, stream);
  });
}

void launch_unscale_and_check(DType dtype, void* grad, int64_t n, double inv_scale, float* found_inf,
                              cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() { unscale_typed<T>(static_cast<T*>(grad), n, inv_scale, found_inf, stream); });
}

}  // namespace syncgrad::cuda
