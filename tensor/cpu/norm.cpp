// CPU batch norm and layer norm kernels, and batch norm fused with a residual add and a ReLU (batch_norm_relu).
// Statistics are two-pass (mean, then centred squares) in double, except that float32 runs (a layer norm row, a
// batch norm plane) are summed in float lanes first (below); the elementwise parts run in opmath (float for f32
// and the half types, double for f64) as one fused scale-and-shift per element. Batch norm handles a group of
// channels start to end (statistics or gradient sums, then the elementwise pass) while the group is in cache.
// Work is split over channels (batch norm) or rows (layer norm; its parameter gradients are summed per fixed
// block of rows, the blocks then added in order), so every sum has a fixed order whatever the thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tensor/cpu/relu_mask.h"
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

// Eight doubles: the independent partial sums of the reductions below (element i of a run goes to lane i % 8,
// the tail to lane 0, and the lanes are added in order at the end, so a sum's order is fixed). Written as
// vectors: GCC leaves the scalar form of these loops unvectorised.
typedef double Lanes __attribute__((vector_size(8 * sizeof(double))));
typedef float FloatLanes __attribute__((vector_size(8 * sizeof(float))));
constexpr int kLanes = 8;

// p[0, 8) as doubles.
template <class T>
Lanes load_lanes(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    FloatLanes f;
    std::memcpy(&f, p, sizeof f);
    return __builtin_convertvector(f, Lanes);
  } else if constexpr (std::is_same_v<T, double>) {
    Lanes d;
    std::memcpy(&d, p, sizeof d);
    return d;
  } else {  // the half types: widened to float (vectorisable conversions), then to double
    FloatLanes f;
    for (int l = 0; l < kLanes; ++l) f[l] = convert<float>(p[l]);
    return __builtin_convertvector(f, Lanes);
  }
}

// ---- float32 runs: sums in float over 16 lanes ----
// A layer norm row is 128-4096 values and a batch norm (sample, channel) plane 16-4096 (added to the channel's
// double total per plane), so each lane adds at most 256 of them: float sums lose nothing a test or training
// can see there, and twice the lanes of the double sums take half the instructions (the default GPT's layer
// norm forward and backward: 1.45-1.48 -> 1.10-1.19 ms per (8192, 128) call, one core of the AMX Xeon,
// `syncgrad-bench gpt-kernels`).
// Under AVX-512 the 16 lanes are one register. Without it g++ keeps a 64-byte vector variable in memory (each
// add of a loop-carried sum went through the stack and general registers: the batch norm statistics and
// normalisation took 11% of a ResNet-20 step on an AVX2 Zen 3 EPYC), so there they are two 8-float halves, lane
// l in half l / 8: the same sums in the same order.
#if defined(__AVX512F__)
typedef float Floats __attribute__((vector_size(16 * sizeof(float))));
#else
struct Floats {
  FloatLanes lo, hi;
  friend Floats operator+(Floats a, const Floats& b) { return {a.lo + b.lo, a.hi + b.hi}; }
  friend Floats operator-(Floats a, const Floats& b) { return {a.lo - b.lo, a.hi - b.hi}; }
  friend Floats operator*(Floats a, const Floats& b) { return {a.lo * b.lo, a.hi * b.hi}; }
  friend Floats operator-(Floats a, float b) { return {a.lo - b, a.hi - b}; }
  Floats& operator+=(const Floats& b) { return *this = *this + b; }
  Floats& operator*=(const Floats& b) { return *this = *this * b; }
  float operator[](int l) const { return l < 8 ? lo[l] : hi[l - 8]; }
};
#endif

// p[0, 16) (one memcpy per register: a 64-byte memcpy into the halves went through the stack).
inline Floats load_floats(const float* p) {
  Floats v;
#if defined(__AVX512F__)
  std::memcpy(&v, p, sizeof v);
#else
  std::memcpy(&v.lo, p, sizeof v.lo);
  std::memcpy(&v.hi, p + 8, sizeof v.hi);
#endif
  return v;
}

// What a run of T is summed in: float for float32, double otherwise; and its lanes.
template <class T>
using RunSum = std::conditional_t<std::is_same_v<T, float>, float, double>;
template <class A>
using SumLanes = std::conditional_t<std::is_same_v<A, float>, Floats, Lanes>;
template <class A>
constexpr int kSumLanes = sizeof(SumLanes<A>) / sizeof(A);

// p[0, kSumLanes<A>) in A's lanes (float lanes only for float32 runs).
template <class A, class T>
SumLanes<A> load_sum_lanes(const T* p) {
  if constexpr (std::is_same_v<A, float>) {
    static_assert(std::is_same_v<T, float>, "float lanes sum float32 runs only");
    return load_floats(p);
  } else {
    return load_lanes(p);
  }
}

// first (lane 0 with the run's tail added) and lanes 1, 2, ... added in order.
template <class A>
A lanes_total(const SumLanes<A>& lanes, A first) {
  A total = first;
  for (int l = 1; l < kSumLanes<A>; ++l) total += lanes[l];
  return total;
}

// Sum of f(x[i]) over a contiguous run in A (element i to lane i % lanes, the tail to lane 0); f takes and
// returns an A or A's lanes alike.
template <class A, class T, class F>
A accumulate_run(const T* x, int64_t n, F f) {
  SumLanes<A> lanes = {};
  int64_t i = 0;
  for (; i + kSumLanes<A> <= n; i += kSumLanes<A>) lanes += f(load_sum_lanes<A>(x + i));
  A first = lanes[0];  // lane 0, then the tail
  for (; i < n; ++i) first += f(convert<A>(x[i]));
  return lanes_total<A>(lanes, first);
}

// Over a run of n: {sum of g, sum of g * (x - mu)} with g = dy (or dy * w[i] when w is given), in A.
struct GradSums {
  double g = 0, g_xmu = 0;
};

template <class A, class T>
GradSums grad_sums_run(const T* dy, const T* x, const A* w, int64_t n, A mu) {
  SumLanes<A> g_lanes = {}, gx_lanes = {};
  int64_t i = 0;
  for (; i + kSumLanes<A> <= n; i += kSumLanes<A>) {
    SumLanes<A> g = load_sum_lanes<A>(dy + i);
    if (w != nullptr) g *= load_sum_lanes<A>(w + i);
    g_lanes += g;
    gx_lanes += g * (load_sum_lanes<A>(x + i) - mu);
  }
  A g_first = g_lanes[0], gx_first = gx_lanes[0];  // lane 0, then the tail
  for (; i < n; ++i) {
    const A g = w != nullptr ? convert<A>(dy[i]) * w[i] : convert<A>(dy[i]);
    g_first += g;
    gx_first += g * (convert<A>(x[i]) - mu);
  }
  return {lanes_total<A>(g_lanes, g_first), lanes_total<A>(gx_lanes, gx_first)};
}

// Adds one row's layer norm parameter gradients, dy * xhat with xhat = (x - mu) * s (weight) and dy (bias),
// into gw and gb, in double.
template <class T>
void accumulate_param_grads(const T* dy, const T* x, int64_t n, double mu, double s, double* __restrict gw,
                            double* __restrict gb) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Lanes g = load_lanes(dy + i);
    Lanes w_sum, b_sum;
    std::memcpy(&w_sum, gw + i, sizeof w_sum);
    std::memcpy(&b_sum, gb + i, sizeof b_sum);
    w_sum += g * ((load_lanes(x + i) - mu) * s);
    b_sum += g;
    std::memcpy(gw + i, &w_sum, sizeof w_sum);
    std::memcpy(gb + i, &b_sum, sizeof b_sum);
  }
  for (; i < n; ++i) {
    const double g = convert<double>(dy[i]);
    gw[i] += g * ((convert<double>(x[i]) - mu) * s);
    gb[i] += g;
  }
}

// Adds one row's parameter gradients, dy * (x - mu) * s (weight) and dy (bias), into gw and gb, in float.
void accumulate_param_grads_floats(const float* dy, const float* x, int64_t n, float mu, float s,
                                   float* __restrict gw, float* __restrict gb) {
  for (int64_t i = 0; i < n; ++i) {
    gw[i] += dy[i] * ((x[i] - mu) * s);
    gb[i] += dy[i];
  }
}

// Rows per partial sum of the layer norm parameter gradients: at least 64, and so many that there are at most
// 256 partials (their memory stays at 4 KiB per feature). A function of the row count alone, never of the
// threads.
int64_t layer_norm_row_block(int64_t rows) { return std::max<int64_t>(64, (rows + 255) / 256); }

// ---- batch norm: contiguous (N, C, L); channel c of sample n is the run at (n * C + c) * L ----

struct ChannelLayout {
  int64_t n, c, l;
  explicit ChannelLayout(const Tensor& t) : n(t.sizes()[0]), c(t.sizes()[1]), l(t.sizes()[2]) {}
  int64_t run(int64_t sample, int64_t channel) const { return (sample * c + channel) * l; }
};

// acc[c] += sum over samples and positions of f(ch, x) for channels [c0, c1): in double, each float32 plane
// summed in float first. f takes x as a double, a float, Lanes or Floats.
template <class T, class F>
void accumulate_channels(const T* x, const ChannelLayout& s, int64_t c0, int64_t c1, double* acc, F f) {
  for (int64_t sample = 0; sample < s.n; ++sample) {
    if (s.l == 1) {
      const T* row = x + s.run(sample, 0);
      for (int64_t ch = c0; ch < c1; ++ch) acc[ch] += f(ch, convert<double>(row[ch]));
    } else {
      for (int64_t ch = c0; ch < c1; ++ch) {
        acc[ch] += accumulate_run<RunSum<T>>(x + s.run(sample, ch), s.l, [&](auto v) { return f(ch, v); });
      }
    }
  }
}

// The scalar type of what accumulate_channels passes f: v's element type for vectors.
template <class V>
struct ElementOf {
  using type = V;
};
template <>
struct ElementOf<Lanes> {
  using type = double;
};
template <>
struct ElementOf<Floats> {
  using type = float;
};

// The channels a parallel chunk processes together: about kGrainElements elements, so that a group's data is
// still in L2 when the pass after its statistics reads it again (one channel of a (128, 16, 32, 32) batch is
// 512 KiB).
template <class F>
void for_channel_groups(const ChannelLayout& s, F f) {
  const int64_t group = grain_for(s.n * s.l);
  parallel_for(s.c, group, [&](int64_t c0, int64_t c1) {
    for (int64_t g0 = c0; g0 < c1; g0 += group) f(g0, std::min(c1, g0 + group));
  });
}

// Calls f(offset, channel) for the run of every (sample, channel) of channels [c0, c1).
template <class F>
void map_runs(const ChannelLayout& s, int64_t c0, int64_t c1, F f) {
  for (int64_t sample = 0; sample < s.n; ++sample) {
    for (int64_t ch = c0; ch < c1; ++ch) f(s.run(sample, ch), ch);
  }
}

// What the forward applies after normalising, in the same pass: + residual (when not null), then max(., 0).
// Each step rounds to T as the separate add and relu would, so the fused result equals theirs. relu_bits, when
// not null, receives the relu's mask (relu_mask.h), relu_mask::words(L) words per (sample, channel) run.
template <class T>
struct Epilogue {
  const T* residual = nullptr;
  bool relu = false;
  uint64_t* relu_bits = nullptr;
};

template <class T>
void batch_norm_forward_impl(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd,
                             const Tensor& input, const Tensor& weight, const Tensor& bias,
                             const Tensor& running_mean, const Tensor& running_var, bool training, double momentum,
                             double eps, Epilogue<T> epilogue) {
  using M = opmath_t<T>;
  const ChannelLayout s(input);
  const T* x = static_cast<const T*>(input.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const double count = static_cast<double>(s.n * s.l);
  std::vector<double> mean(s.c, 0.0), var(s.c, 0.0), rm, rv;
  if (training) {
    if (running_mean.defined()) rm = load_vector(running_mean), rv = load_vector(running_var);
  } else {
    mean = load_vector(running_mean);
    var = load_vector(running_var);
  }
  const std::vector<double> w = load_vector(weight), b = load_vector(bias);
  std::vector<double> invstd(s.c);
  // Per group of channels: the batch statistics (two passes in double: mean, then centred squares), then the
  // normalisation while the group's data is still in cache.
  for_channel_groups(s, [&](int64_t c0, int64_t c1) {
    if (training) {
      accumulate_channels(x, s, c0, c1, mean.data(), [](int64_t, auto v) { return v; });
      for (int64_t ch = c0; ch < c1; ++ch) mean[ch] /= count;
      accumulate_channels(x, s, c0, c1, var.data(), [&mean](int64_t ch, auto v) {
        const auto d = v - static_cast<typename ElementOf<decltype(v)>::type>(mean[ch]);
        return d * d;
      });
      for (int64_t ch = c0; ch < c1; ++ch) {
        var[ch] /= count;
        if (!rm.empty()) {
          rm[ch] = (1 - momentum) * rm[ch] + momentum * mean[ch];
          rv[ch] = (1 - momentum) * rv[ch] + momentum * var[ch] * count / (count - 1);
        }
      }
    }
    std::vector<M> scale(c1 - c0), shift(c1 - c0);
    for (int64_t ch = c0; ch < c1; ++ch) {
      invstd[ch] = 1.0 / std::sqrt(var[ch] + eps);
      double sc = invstd[ch] * (w.empty() ? 1.0 : w[ch]);
      scale[ch - c0] = static_cast<M>(sc);
      shift[ch - c0] = static_cast<M>((b.empty() ? 0.0 : b[ch]) - mean[ch] * sc);
    }
    map_runs(s, c0, c1, [&](int64_t offset, int64_t ch) {
      const M a = scale[ch - c0], c = shift[ch - c0];
      const int64_t end = offset + s.l;
      if (epilogue.residual != nullptr) {
        const T* r = epilogue.residual;
        for (int64_t i = offset; i < end; ++i) {
          const M v = convert<M>(convert<T>(convert<M>(convert<T>(convert<M>(x[i]) * a + c)) + convert<M>(r[i])));
          y[i] = convert<T>(epilogue.relu && v < M(0) ? M(0) : v);
        }
      } else if (epilogue.relu) {
        for (int64_t i = offset; i < end; ++i) {
          const M v = convert<M>(x[i]) * a + c;
          y[i] = convert<T>(v < M(0) ? M(0) : v);
        }
      } else {
        for (int64_t i = offset; i < end; ++i) y[i] = convert<T>(convert<M>(x[i]) * a + c);
      }
      if (epilogue.relu_bits != nullptr) {
        relu_mask::pack(y + offset, s.l, epilogue.relu_bits + offset / s.l * relu_mask::words(s.l));
      }
    });
  });
  if (!rm.empty()) {
    store_vector(running_mean, rm);
    store_vector(running_var, rv);
  }
  store_vector(save_mean, mean);
  store_vector(save_invstd, invstd);
}

void batch_norm_forward_kernel(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd,
                               const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const Tensor& running_mean, const Tensor& running_var, bool training, double momentum,
                               double eps) {
  visit_floating(input.dtype(), "batch_norm", [&]<class T>() {
    batch_norm_forward_impl<T>(out, save_mean, save_invstd, input, weight, bias, running_mean, running_var, training,
                               momentum, eps, {});
  });
}

// The relu mask's words, or null when undefined.
uint64_t* mask_words(const Tensor& relu_mask) {
  return relu_mask.defined() ? static_cast<uint64_t*>(relu_mask.data_ptr()) : nullptr;
}

void batch_norm_relu_forward_kernel(const Tensor& out, const Tensor& relu_mask, const Tensor& save_mean,
                                    const Tensor& save_invstd, const Tensor& input, const Tensor& residual,
                                    const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                                    const Tensor& running_var, bool training, double momentum, double eps) {
  visit_floating(input.dtype(), "batch_norm_relu", [&]<class T>() {
    const T* r = residual.defined() ? static_cast<const T*>(residual.data_ptr()) : nullptr;
    batch_norm_forward_impl<T>(out, save_mean, save_invstd, input, weight, bias, running_mean, running_var, training,
                               momentum, eps, {r, true, mask_words(relu_mask)});
  });
}

// The gradient reaching the normalisation along the run [offset, offset + n) (the run of one (sample, channel)):
// dy's run, or, behind a fused relu (relu_bits: the mask its forward kept), dy where the relu's output was
// positive, else 0, written into `masked` (n values) first. The passes below then read it as they read dy, so
// that the fused backward computes exactly what relu's backward followed by batch norm's computes.
template <class T>
const T* grad_run(const T* dy, const uint64_t* relu_bits, int64_t offset, int64_t n, T* masked) {
  if (relu_bits == nullptr) return dy + offset;
  relu_mask::select(dy + offset, relu_bits + offset / n * relu_mask::words(n), n, masked);
  return masked;
}

// dy's gradient through batch norm (relu_bits null) or through batch norm followed by + residual and relu
// (relu_bits: the fused forward's mask; grad_residual, when defined, receives the masked gradient).
template <class T>
void batch_norm_backward_impl(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                              const Tensor& grad_residual, const T* dy, const uint64_t* relu_bits,
                              const Tensor& input, const Tensor& save_mean, const Tensor& save_invstd,
                              const Tensor& weight, bool training) {
  using M = opmath_t<T>;
  const ChannelLayout s(input);
  const T* x = static_cast<const T*>(input.data_ptr());
  T* g_res = grad_residual.defined() ? static_cast<T*>(grad_residual.data_ptr()) : nullptr;
  const std::vector<double> mean = load_vector(save_mean), invstd = load_vector(save_invstd);
  const std::vector<double> w = load_vector(weight);
  const double count = static_cast<double>(s.n * s.l);
  T* gx = grad_input.defined() ? static_cast<T*>(grad_input.data_ptr()) : nullptr;
  // Per channel: sum(g) and sum(g * (x - mean)); then, while the group's data is in cache,
  // grad_input = k_g * g + k_x * (x - mean) + k_0.
  std::vector<double> sum_g(s.c, 0.0), sum_g_xmu(s.c, 0.0);
  for_channel_groups(s, [&](int64_t c0, int64_t c1) {
    thread_local std::vector<T> scratch;
    if (relu_bits != nullptr && g_res == nullptr) scratch.resize(static_cast<size_t>(s.l));
    auto masked_into = [&](int64_t offset) { return g_res != nullptr ? g_res + offset : scratch.data(); };
    map_runs(s, c0, c1, [&](int64_t offset, int64_t ch) {
      const T* g = grad_run(dy, relu_bits, offset, s.l, masked_into(offset));
      const GradSums sums =
          grad_sums_run<RunSum<T>>(g, x + offset, nullptr, s.l, static_cast<RunSum<T>>(mean[ch]));
      sum_g[ch] += sums.g;
      sum_g_xmu[ch] += sums.g_xmu;
    });
    if (gx == nullptr) return;
    std::vector<M> k_g(c1 - c0), k_x(c1 - c0), k_0(c1 - c0), mu(c1 - c0);
    for (int64_t ch = c0; ch < c1; ++ch) {
      const double scale = invstd[ch] * (w.empty() ? 1.0 : w[ch]);
      k_g[ch - c0] = static_cast<M>(scale);
      k_x[ch - c0] = training ? static_cast<M>(-scale * invstd[ch] * invstd[ch] * sum_g_xmu[ch] / count) : M(0);
      k_0[ch - c0] = training ? static_cast<M>(-scale * sum_g[ch] / count) : M(0);
      mu[ch - c0] = static_cast<M>(mean[ch]);
    }
    map_runs(s, c0, c1, [&](int64_t offset, int64_t ch) {
      const M a = k_g[ch - c0], b = k_x[ch - c0], c = k_0[ch - c0], m = mu[ch - c0];
      const T* g = g_res != nullptr ? g_res + offset : grad_run(dy, relu_bits, offset, s.l, scratch.data());
      const T* xr = x + offset;
      T* out = gx + offset;
      for (int64_t i = 0; i < s.l; ++i) {
        out[i] = convert<T>(a * convert<M>(g[i]) + b * (convert<M>(xr[i]) - m) + c);
      }
    });
  });
  if (grad_weight.defined()) {
    std::vector<double> gw(s.c);
    for (int64_t ch = 0; ch < s.c; ++ch) gw[ch] = sum_g_xmu[ch] * invstd[ch];
    store_vector(grad_weight, gw);
  }
  store_vector(grad_bias, sum_g);
}

void batch_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& input, const Tensor& save_mean,
                                const Tensor& save_invstd, const Tensor& weight, bool training) {
  visit_floating(input.dtype(), "batch_norm_backward", [&]<class T>() {
    batch_norm_backward_impl<T>(grad_input, grad_weight, grad_bias, Tensor(),
                                static_cast<const T*>(grad_out.data_ptr()), nullptr, input, save_mean, save_invstd,
                                weight, training);
  });
}

void batch_norm_relu_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                     const Tensor& grad_residual, const Tensor& grad_out, const Tensor& relu_mask,
                                     const Tensor& input, const Tensor& save_mean, const Tensor& save_invstd,
                                     const Tensor& weight, bool training) {
  visit_floating(input.dtype(), "batch_norm_relu_backward", [&]<class T>() {
    batch_norm_backward_impl<T>(grad_input, grad_weight, grad_bias, grad_residual,
                                static_cast<const T*>(grad_out.data_ptr()), mask_words(relu_mask), input, save_mean,
                                save_invstd, weight, training);
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
        using A = RunSum<T>;
        const A row_mean = accumulate_run<A>(xr, k, [](auto v) { return v; }) / static_cast<A>(k);
        const double mu = row_mean;
        const double var = accumulate_run<A>(xr, k, [row_mean](auto v) {
                             return (v - row_mean) * (v - row_mean);
                           }) / static_cast<A>(k);
        mean[r] = mu;
        rstd[r] = 1.0 / std::sqrt(var + eps);
        const M m = static_cast<M>(mu), s = static_cast<M>(rstd[r]);
        T* yr = y + r * k;
        for (int64_t i = 0; i < k; ++i) yr[i] = convert<T>((convert<M>(xr[i]) - m) * s * w[i] + b[i]);
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
    T* gx = grad_input.defined() ? static_cast<T*>(grad_input.data_ptr()) : nullptr;
    const bool param_grads = grad_weight.defined() || grad_bias.defined();
    // Parameter gradients: each block of block_rows rows sums into its own partial (weight then bias; float
    // for float32 input, else double), the partials are added in block order in double, so the sums do not
    // depend on the thread count.
    constexpr bool kFloatRows = std::is_same_v<T, float>;
    using Partial = std::conditional_t<kFloatRows, float, double>;
    const int64_t block_rows = layer_norm_row_block(rows);
    const int64_t blocks = (rows + block_rows - 1) / block_rows;
    std::vector<Partial> partials(param_grads ? static_cast<size_t>(blocks * 2 * k) : 0, Partial(0));
    parallel_for(blocks, grain_for(block_rows * k), [&](int64_t b0, int64_t b1) {
      for (int64_t block = b0; block < b1; ++block) {
        Partial* block_gw = param_grads ? partials.data() + block * 2 * k : nullptr;
        for (int64_t r = block * block_rows; r < std::min(rows, (block + 1) * block_rows); ++r) {
          const int64_t base = r * k;
          const double mu = mean[r], s = rstd[r];
          if (block_gw != nullptr) {
            if constexpr (kFloatRows) {
              accumulate_param_grads_floats(dy + base, x + base, k, static_cast<float>(mu), static_cast<float>(s),
                                            block_gw, block_gw + k);
            } else {
              accumulate_param_grads(dy + base, x + base, k, mu, s, block_gw, block_gw + k);
            }
          }
          if (gx == nullptr) continue;
          // With g = dy * w and xhat = (x - mean) * rstd: grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)).
          GradSums sums;
          if constexpr (kFloatRows) {  // w_m is float here
            sums = grad_sums_run<float>(dy + base, x + base, w_m.data(), k, static_cast<float>(mu));
          } else {
            sums = grad_sums_run<double>(dy + base, x + base, w.data(), k, mu);
          }
          const M rs = static_cast<M>(s), m = static_cast<M>(mu);
          const M mean_g = static_cast<M>(sums.g / static_cast<double>(k));
          const M mean_g_xhat = static_cast<M>(sums.g_xmu * s / static_cast<double>(k));
          for (int64_t i = 0; i < k; ++i) {
            M xhat = (convert<M>(x[base + i]) - m) * rs;
            M g = convert<M>(dy[base + i]) * w_m[i];
            gx[base + i] = convert<T>(rs * (g - mean_g - xhat * mean_g_xhat));
          }
        }
      }
    });
    if (param_grads) {
      std::vector<double> gw(k, 0.0), gb(k, 0.0);
      for (int64_t block = 0; block < blocks; ++block) {
        const Partial* block_gw = partials.data() + block * 2 * k;
        for (int64_t i = 0; i < k; ++i) {
          gw[i] += block_gw[i];
          gb[i] += block_gw[k + i];
        }
      }
      store_vector(grad_weight, gw);
      store_vector(grad_bias, gb);
    }
  });
}

const KernelRegistrar reg_bn_forward(kernels::batch_norm_forward, DeviceType::kCPU, &batch_norm_forward_kernel);
const KernelRegistrar reg_bn_backward(kernels::batch_norm_backward, DeviceType::kCPU, &batch_norm_backward_kernel);
const KernelRegistrar reg_bn_relu_forward(kernels::batch_norm_relu_forward, DeviceType::kCPU,
                                          &batch_norm_relu_forward_kernel);
const KernelRegistrar reg_bn_relu_backward(kernels::batch_norm_relu_backward, DeviceType::kCPU,
                                           &batch_norm_relu_backward_kernel);
const KernelRegistrar reg_ln_forward(kernels::layer_norm_forward, DeviceType::kCPU, &layer_norm_forward_kernel);
const KernelRegistrar reg_ln_backward(kernels::layer_norm_backward, DeviceType::kCPU, &layer_norm_backward_kernel);

}  // namespace
}  // namespace syncgrad::cpu
