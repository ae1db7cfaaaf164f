// CPU batch norm and layer norm kernels. Statistics are two-pass (mean, then centred squares) in double;
// the elementwise parts run in opmath (float for f32 and the half types, double for f64) as one fused
// scale-and-shift per element. Work is split over channels (batch norm), rows (layer norm) or features
// (layer norm parameter gradients), so every sum has a fixed order whatever the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/cpu/visit.h"
#include "tensor/ops/norm.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

constexpr int64_t kGrainElements = 1 << 15;

// Items per parallel chunk so that each chunk covers about kGrainElements elements.
int64_t grain_for(int64_t elements_per_item) {
  return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, elements_per_item));
}

// The values of a 1-D floating tensor as doubles (empty when undefined), read through its stride.
std::vector<double> load_vector(const Tensor& t) {
  if (!t.defined()) return {};
  std::vector<double> values(static_cast<size_t>(t.numel()));
  visit_floating(t.dtype(), "norm", [&]<class P>() {
    const P* p = static_cast<const P*>(t.data_ptr());
    const int64_t stride = t.numel() > 1 ? t.stride(0) : 1;
    for (size_t i = 0; i < values.size(); ++i) values[i] = convert<double>(p[static_cast<int64_t>(i) * stride]);
  });
  return values;
}

// Writes doubles into a 1-D floating tensor (a no-op when undefined), through its stride.
void store_vector(const Tensor& t, const std::vector<double>& values) {
  if (!t.defined()) return;
  visit_floating(t.dtype(), "norm", [&]<class P>() {
    P* p = static_cast<P*>(t.data_ptr());
    const int64_t stride = t.numel() > 1 ? t.stride(0) : 1;
    for (size_t i = 0; i < values.size(); ++i) p[static_cast<int64_t>(i) * stride] = static_cast<P>(values[i]);
  });
}

// Sum of f(x[i]) over a contiguous run, in double with independent lanes (vectorisable).
template <class T, class F>
double accumulate_run(const T* x, int64_t n, F f) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += f(convert<double>(x[i + l]));
  }
  for (; i < n; ++i) lanes[0] += f(convert<double>(x[i]));
  double total = 0;
  for (double lane : lanes) total += lane;
  return total;
}

// Over a contiguous run: {sum of g, sum of g * (x - mu)} with g = dy (or dy * w[i] when w is given), in double
// with independent lanes (vectorisable).
struct GradSums {
  double g = 0, g_xmu = 0;
};

template <class T>
GradSums grad_sums_run(const T* dy, const T* x, const double* w, int64_t n, double mu) {
  constexpr int kLanes = 8;
  double g_lanes[kLanes] = {}, gx_lanes[kLanes] = {};
  auto g_at = [&](int64_t i) { return w ? convert<double>(dy[i]) * w[i] : convert<double>(dy[i]); };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      double g = g_at(i + l);
      g_lanes[l] += g;
      gx_lanes[l] += g * (convert<double>(x[i + l]) - mu);
    }
  }
  for (; i < n; ++i) {
    double g = g_at(i);
    g_lanes[0] += g;
    gx_lanes[0] += g * (convert<double>(x[i]) - mu);
  }
  GradSums sums;
  for (int l = 0; l < kLanes; ++l) {
    sums.g += g_lanes[l];
    sums.g_xmu += gx_lanes[l];
  }
  return sums;
}

// ---- batch norm: contiguous (N, C, L); channel c of sample n is the run at (n * C + c) * L ----

struct ChannelLayout {
  int64_t n, c, l;
  explicit ChannelLayout(const Tensor& t) : n(t.sizes()[0]), c(t.sizes()[1]), l(t.sizes()[2]) {}
  int64_t run(int64_t sample, int64_t channel) const { return (sample * c + channel) * l; }
};

// acc[c] += sum over samples and positions of f(x) for channels [c0, c1).
template <class T, class F>
void accumulate_channels(const T* x, const ChannelLayout& s, int64_t c0, int64_t c1, double* acc, F f) {
  for (int64_t sample = 0; sample < s.n; ++sample) {
    if (s.l == 1) {
      const T* row = x + s.run(sample, 0);
      for (int64_t ch = c0; ch < c1; ++ch) acc[ch] += f(ch, convert<double>(row[ch]));
    } else {
      for (int64_t ch = c0; ch < c1; ++ch) {
        acc[ch] += accumulate_run(x + s.run(sample, ch), s.l, [&](double v) { return f(ch, v); });
      }
    }
  }
}

// Batch mean and biased variance of every channel (two passes in double).
template <class T>
void channel_moments(const T* x, const ChannelLayout& s, std::vector<double>& mean, std::vector<double>& var) {
  const double count = static_cast<double>(s.n * s.l);
  parallel_for(s.c, grain_for(s.n * s.l), [&](int64_t c0, int64_t c1) {
    accumulate_channels(x, s, c0, c1, mean.data(), [](int64_t, double v) { return v; });
    for (int64_t ch = c0; ch < c1; ++ch) mean[ch] /= count;
    accumulate_channels(x, s, c0, c1, var.data(), [&mean](int64_t ch, double v) {
      double d = v - mean[ch];
      return d * d;
    });
    for (int64_t ch = c0; ch < c1; ++ch) var[ch] /= count;
  });
}

// Calls f(offset, channel) for the run of every (sample, channel), split over channels.
template <class F>
void map_channels(const ChannelLayout& s, F f) {
  parallel_for(s.c, grain_for(s.n * s.l), [&](int64_t c0, int64_t c1) {
    for (int64_t sample = 0; sample < s.n; ++sample) {
      for (int64_t ch = c0; ch < c1; ++ch) f(s.run(sample, ch), ch);
    }
  });
}

void batch_norm_forward_kernel(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd,
                               const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const Tensor& running_mean, const Tensor& running_var, bool training, double momentum,
                               double eps) {
  visit_floating(input.dtype(), "batch_norm", [&]<class T>() {
    using M = opmath_t<T>;
    const ChannelLayout s(input);
    const T* x = static_cast<const T*>(input.data_ptr());
    std::vector<double> mean(s.c, 0.0), var(s.c, 0.0);
    if (training) {
      channel_moments(x, s, mean, var);
      if (running_mean.defined()) {
        std::vector<double> rm = load_vector(running_mean), rv = load_vector(running_var);
        const double count = static_cast<double>(s.n * s.l);
        for (int64_t ch = 0; ch < s.c; ++ch) {
          rm[ch] = (1 - momentum) * rm[ch] + momentum * mean[ch];
          rv[ch] = (1 - momentum) * rv[ch] + momentum * var[ch] * count / (count - 1);
        }
        store_vector(running_mean, rm);
        store_vector(running_var, rv);
      }
    } else {
      mean = load_vector(running_mean);
      var = load_vector(running_var);
    }
    std::vector<double> w = load_vector(weight), b = load_vector(bias), invstd(s.c);
    std::vector<M> scale(s.c), shift(s.c);
    for (int64_t ch = 0; ch < s.c; ++ch) {
      invstd[ch] = 1.0 / std::sqrt(var[ch] + eps);
      double sc = invstd[ch] * (w.empty() ? 1.0 : w[ch]);
      scale[ch] = static_cast<M>(sc);
      shift[ch] = static_cast<M>((b.empty() ? 0.0 : b[ch]) - mean[ch] * sc);
    }
    T* y = static_cast<T*>(out.data_ptr());
    map_channels(s, [&](int64_t offset, int64_t ch) {
      const M a = scale[ch], c = shift[ch];
      for (int64_t i = offset; i < offset + s.l; ++i) y[i] = static_cast<T>(static_cast<M>(x[i]) * a + c);
    });
    store_vector(save_mean, mean);
    store_vector(save_invstd, invstd);
  });
}

void batch_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& input, const Tensor& save_mean,
                                const Tensor& save_invstd, const Tensor& weight, bool training) {
  visit_floating(input.dtype(), "batch_norm_backward", [&]<class T>() {
    using M = opmath_t<T>;
    const ChannelLayout s(input);
    const T* x = static_cast<const T*>(input.data_ptr());
    const T* dy = static_cast<const T*>(grad_out.data_ptr());
    const std::vector<double> mean = load_vector(save_mean), invstd = load_vector(save_invstd);
    const std::vector<double> w = load_vector(weight);
    // Per channel: sum(dy) and sum(dy * (x - mean)).
    std::vector<double> sum_dy(s.c, 0.0), sum_dy_xmu(s.c, 0.0);
    parallel_for(s.c, grain_for(s.n * s.l), [&](int64_t c0, int64_t c1) {
      for (int64_t sample = 0; sample < s.n; ++sample) {
        for (int64_t ch = c0; ch < c1; ++ch) {
          const int64_t offset = s.run(sample, ch);
          GradSums sums = grad_sums_run(dy + offset, x + offset, nullptr, s.l, mean[ch]);
          sum_dy[ch] += sums.g;
          sum_dy_xmu[ch] += sums.g_xmu;
        }
      }
    });
    if (grad_input.defined()) {
      // grad_input = k_dy * dy + k_x * (x - mean) + k_0 per channel.
      const double count = static_cast<double>(s.n * s.l);
      std::vector<M> k_dy(s.c), k_x(s.c), k_0(s.c), mu(s.c);
      for (int64_t ch = 0; ch < s.c; ++ch) {
        double scale = invstd[ch] * (w.empty() ? 1.0 : w[ch]);
        k_dy[ch] = static_cast<M>(scale);
        k_x[ch] = training ? static_cast<M>(-scale * invstd[ch] * invstd[ch] * sum_dy_xmu[ch] / count) : M(0);
        k_0[ch] = training ? static_cast<M>(-scale * sum_dy[ch] / count) : M(0);
        mu[ch] = static_cast<M>(mean[ch]);
      }
      T* gx = static_cast<T*>(grad_input.data_ptr());
      map_channels(s, [&](int64_t offset, int64_t ch) {
        const M a = k_dy[ch], b = k_x[ch], c = k_0[ch], m = mu[ch];
        for (int64_t i = offset; i < offset + s.l; ++i) {
          gx[i] = static_cast<T>(a * static_cast<M>(dy[i]) + b * (static_cast<M>(x[i]) - m) + c);
        }
      });
    }
    if (grad_weight.defined()) {
      std::vector<double> gw(s.c);
      for (int64_t ch = 0; ch < s.c; ++ch) gw[ch] = sum_dy_xmu[ch] * invstd[ch];
      store_vector(grad_weight, gw);
    }
    store_vector(grad_bias, sum_dy);
  });
}

// ---- layer norm: contiguous (M, K); row m is the run at m * K ----

void layer_norm_forward_kernel(const Tensor& out, const Tensor& save_mean, const Tensor& save_rstd,
                               const Tensor& input, const Tensor& weight, const Tensor& bias, double eps) {
  visit_floating(input.dtype(), "layer_norm", [&]<class T>() {
    using M = opmath_t<T>;
    const int64_t rows = input.sizes()[0], k = input.sizes()[1];
    const T* x = static_cast<const T*>(input.data_ptr());
    T* y = static_cast<T*>(out.data_ptr());
    std::vector<M> w(k, M(1)), b(k, M(0));
    if (weight.defined()) std::ranges::transform(load_vector(weight), w.begin(), [](double v) { return M(v); });
    if (bias.defined()) std::ranges::transform(load_vector(bias), b.begin(), [](double v) { return M(v); });
    std::vector<double> mean(rows), rstd(rows);
    parallel_for(rows, grain_for(k), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * k;
        const double mu = accumulate_run(xr, k, [](double v) { return v; }) / static_cast<double>(k);
        const double var = accumulate_run(xr, k, [mu](double v) { return (v - mu) * (v - mu); }) / static_cast<double>(k);
        mean[r] = mu;
        rstd[r] = 1.0 / std::sqrt(var + eps);
        const M m = static_cast<M>(mu), s = static_cast<M>(rstd[r]);
        T* yr = y + r * k;
        for (int64_t i = 0; i < k; ++i) yr[i] = static_cast<T>((static_cast<M>(xr[i]) - m) * s * w[i] + b[i]);
      }
    });
    store_vector(save_mean, mean);
    store_vector(save_rstd, rstd);
  });
}

void layer_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& input, const Tensor& save_mean,
                                const Tensor& save_rstd, const Tensor& weight) {
  visit_floating(input.dtype(), "layer_norm_backward", [&]<class T>() {
    using M = opmath_t<T>;
    const int64_t rows = input.sizes()[0], k = input.sizes()[1];
    const T* x = static_cast<const T*>(input.data_ptr());
    const T* dy = static_cast<const T*>(grad_out.data_ptr());
    const std::vector<double> mean = load_vector(save_mean), rstd = load_vector(save_rstd);
    std::vector<double> w = load_vector(weight);
    if (w.empty()) w.assign(k, 1.0);
    std::vector<M> w_m(w.begin(), w.end());
    if (grad_input.defined()) {
      T* gx = static_cast<T*>(grad_input.data_ptr());
      // With g = dy * w and xhat = (x - mean) * rstd: grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)).
      parallel_for(rows, grain_for(k), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t base = r * k;
          const double mu = mean[r], s = rstd[r];
          GradSums sums = grad_sums_run(dy + base, x + base, w.data(), k, mu);
          const M rs = static_cast<M>(s), m = static_cast<M>(mu);
          const M mean_g = static_cast<M>(sums.g / static_cast<double>(k));
          const M mean_g_xhat = static_cast<M>(sums.g_xmu * s / static_cast<double>(k));
          for (int64_t i = 0; i < k; ++i) {
            M xhat = (static_cast<M>(x[base + i]) - m) * rs;
            M g = static_cast<M>(dy[base + i]) * w_m[i];
            gx[base + i] = static_cast<T>(rs * (g - mean_g - xhat * mean_g_xhat));
          }
        }
      });
    }
    if (grad_weight.defined() || grad_bias.defined()) {
      std::vector<double> gw(k, 0.0), gb(k, 0.0);
      parallel_for(k, grain_for(rows), [&](int64_t k0, int64_t k1) {
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t base = r * k;
          const double mu = mean[r], s = rstd[r];
          for (int64_t i = k0; i < k1; ++i) {
            double g = convert<double>(dy[base + i]);
            gw[i] += g * (convert<double>(x[base + i]) - mu) * s;
            gb[i] += g;
          }
        }
      });
      store_vector(grad_weight, gw);
      store_vector(grad_bias, gb);
    }
  });
}

const KernelRegistrar reg_bn_forward(kernels::batch_norm_forward, DeviceType::kCPU, &batch_norm_forward_kernel);
const KernelRegistrar reg_bn_backward(kernels::batch_norm_backward, DeviceType::kCPU, &batch_norm_backward_kernel);
const KernelRegistrar reg_ln_forward(kernels::layer_norm_forward, DeviceType::kCPU, &layer_norm_forward_kernel);
const KernelRegistrar reg_ln_backward(kernels::layer_norm_backward, DeviceType::kCPU, &layer_norm_backward_kernel);

}  // namespace
}  // namespace syncgrad::cpu
