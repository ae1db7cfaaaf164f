// CPU fused optimizer updates (SGD with momentum/nesterov, Adam/AdamW with amsgrad): one loop over the
// parameter, its gradient and its state; half types compute in float and store back in their own type.
#include <array>
#include <cmath>
#include <utility>

#include "tensor/cpu/elementwise_loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/optim_step.h"

namespace syncgrad::cpu {
namespace {

// Elements per thread of an optimizer update: an eighth of a plain elementwise loop's, since each element reads
// and writes three or four tensors and takes a square root and a division (a GPT's 128 x 512 weights split).
constexpr int64_t kOptimizerGrain = 1 << 14;

// Calls update(e_0, ..., e_{K-1}) with references to the i-th element of each operand, for every element.
// All operands have one shape and element type T; contiguous operands take a flat (threaded) loop.
template <class T, size_t K, class Update>
void for_each_element(const std::array<const Tensor*, K>& operands, Update update) {
  bool dense = true;
  for (const Tensor* t : operands) dense = dense && t->is_contiguous();
  std::array<char*, K> bases;
  for (size_t k = 0; k < K; ++k) bases[k] = static_cast<char*>(operands[k]->data_ptr());
  if (dense) {
    std::array<T*, K> ptrs;
    for (size_t k = 0; k < K; ++k) ptrs[k] = reinterpret_cast<T*>(bases[k]);
    run_flat(
        operands[0]->numel(),
        [=](int64_t begin, int64_t end) {
          [&]<size_t... I>(std::index_sequence<I...>) {
            for (int64_t i = begin; i < end; ++i) update(ptrs[I][i]...);
          }(std::make_index_sequence<K>{});
        },
        kOptimizerGrain);
    return;
  }
  for_each_strided<K>(operands[0]->sizes(), bases, operands,
                      [&](const std::array<char*, K>& p, const std::array<int64_t, K>& s, int64_t n) {
                        [&]<size_t... I>(std::index_sequence<I...>) {
                          for (int64_t i = 0; i < n; ++i) update(*reinterpret_cast<T*>(p[I] + i * s[I])...);
                        }(std::make_index_sequence<K>{});
                      });
}

template <class T, bool Momentum, bool FirstStep, bool Nesterov>
void sgd_typed(const Tensor& param, const Tensor& grad, const Tensor& buffer, const SGDStepArgs& args) {
  using M = opmath_t<T>;
  const M lr = static_cast<M>(args.lr);
  const M momentum = static_cast<M>(args.momentum);
  const M keep = static_cast<M>(1.0 - args.dampening);
  const M weight_decay = static_cast<M>(args.weight_decay);
  const M sign = args.maximize ? M(-1) : M(1);
  auto direction = [=](M p, T g) { return sign * static_cast<M>(g) + weight_decay * p; };
  if constexpr (!Momentum) {
    for_each_element<T, 2>({&param, &grad}, [=](T& p, T& g) {
      const M pv = static_cast<M>(p);
      p = static_cast<T>(pv - lr * direction(pv, g));
    });
  } else {
    for_each_element<T, 3>({&param, &grad, &buffer}, [=](T& p, T& g, T& b) {
      const M pv = static_cast<M>(p);
      const M d = direction(pv, g);
      M buf;
      if constexpr (FirstStep) buf = d;
      else buf = momentum * static_cast<M>(b) + keep * d;
      b = static_cast<T>(buf);
      const M update = Nesterov ? d + momentum * buf : buf;
      p = static_cast<T>(pv - lr * update);
    });
  }
}

void sgd_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& buffer, const SGDStepArgs& args) {
  visit_floating(param.dtype(), "sgd_step", [&]<class T>() {
    if (args.momentum == 0.0) return sgd_typed<T, false, false, false>(param, grad, buffer, args);
    if (args.first_step) {
      if (args.nesterov) return sgd_typed<T, true, true, true>(param, grad, buffer, args);
      return sgd_typed<T, true, true, false>(param, grad, buffer, args);
    }
    if (args.nesterov) return sgd_typed<T, true, false, true>(param, grad, buffer, args);
    return sgd_typed<T, true, false, false>(param, grad, buffer, args);
  });
}

template <class T, bool Amsgrad>
void adam_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& args) {
  using M = opmath_t<T>;
  const double step = static_cast<double>(args.step);
  const M step_size = static_cast<M>(args.lr / (1.0 - std::pow(args.beta1, step)));
  const M bias_correction2_sqrt = static_cast<M>(std::sqrt(1.0 - std::pow(args.beta2, step)));
  const M beta1 = static_cast<M>(args.beta1);
  const M beta2 = static_cast<M>(args.beta2);
  const M one_minus_beta1 = static_cast<M>(1.0 - args.beta1);
  const M one_minus_beta2 = static_cast<M>(1.0 - args.beta2);
  const M eps = static_cast<M>(args.eps);
  const M sign = args.maximize ? M(-1) : M(1);
  // Adam adds weight_decay * p to the gradient; AdamW shrinks p by (1 - lr * weight_decay) instead.
  const M l2 = static_cast<M>(args.decoupled_weight_decay ? 0.0 : args.weight_decay);
  const M shrink = static_cast<M>(args.decoupled_weight_decay ? 1.0 - args.lr * args.weight_decay : 1.0);
  struct Moments {
    M first, second;
  };
  // Updates m and v in place; returns their new values in opmath.
  auto moments = [=](M p, T g, T& m, T& v) {
    const M gv = sign * static_cast<M>(g) + l2 * p;
    const M mv = beta1 * static_cast<M>(m) + one_minus_beta1 * gv;
    const M vv = beta2 * static_cast<M>(v) + one_minus_beta2 * gv * gv;
    m = static_cast<T>(mv);
    v = static_cast<T>(vv);
    return Moments{mv, vv};
  };
  auto updated = [=](M p, M first, M second) {
    return static_cast<T>(p * shrink - step_size * first / (std::sqrt(second) / bias_correction2_sqrt + eps));
  };
  if constexpr (Amsgrad) {
    for_each_element<T, 5>({&param, &grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq},
                           [=](T& p, T& g, T& m, T& v, T& v_max) {
                             const M pv = static_cast<M>(p);
                             const Moments mo = moments(pv, g, m, v);
                             const M previous = static_cast<M>(v_max);
                             const M largest = mo.second > previous ? mo.second : previous;
                             v_max = static_cast<T>(largest);
                             p = updated(pv, mo.first, largest);
                           });
  } else {
    for_each_element<T, 4>({&param, &grad, &exp_avg, &exp_avg_sq}, [=](T& p, T& g, T& m, T& v) {
      const M pv = static_cast<M>(p);
      const Moments mo = moments(pv, g, m, v);
      p = updated(pv, mo.first, mo.second);
    });
  }
}

void adam_step_kernel(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                      const Tensor& max_exp_avg_sq, const AdamStepArgs& args) {
  visit_floating(param.dtype(), "adam_step", [&]<class T>() {
    if (args.amsgrad) return adam_typed<T, true>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
    return adam_typed<T, false>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
  });
}

const KernelRegistrar reg_sgd_step(kernels::sgd_step, DeviceType::kCPU, &sgd_step_kernel);
const KernelRegistrar reg_adam_step(kernels::adam_step, DeviceType::kCPU, &adam_step_kernel);

}  // namespace
}  // namespace syncgrad::cpu
