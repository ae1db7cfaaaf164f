// CUDA batch norm and layer norm, forward and backward, with the CPU kernels' formulas
// (tensor/cpu/norm.cpp): statistics in two passes in double, the elementwise parts in opmath as one fused
// scale-and-shift per element. Batch norm: a block of threads per channel does its statistics, the running
// statistics and its elements; layer norm: a block per row, and a thread per feature for the parameter
// gradients (a fixed order of sums, so results are reproducible).
#include <cstdint>
#include <type_traits>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/norm_kernels.h"
#include "tensor/cuda/parallel.cuh"

namespace syncgrad::cuda {
namespace {

// The statistics type: double for f64 inputs, float otherwise.
template <class T>
using stats_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

__host__ __device__ __forceinline__ double load_or(const VectorArg& v, int64_t i, double absent) {
  return v.data == nullptr ? absent : load_as_double(v.data, v.dtype, i * v.stride);
}

__host__ __device__ __forceinline__ void store_if(const VectorArg& v, int64_t i, double value) {
  if (v.data != nullptr) store_from_double(v.data, v.dtype, i * v.stride, value);
}

// Offset of element j (of n * l) of channel c in a contiguous (N, C, L) tensor.
__host__ __device__ __forceinline__ int64_t channel_offset(const BatchNormDims& d, int64_t c, int64_t j) {
  return ((j / d.l) * d.c + c) * d.l + j % d.l;
}

template <class T>
void batch_norm_forward_typed(T* out, stats_t<T>* save_mean, stats_t<T>* save_invstd, const T* input, VectorArg weight,
                              VectorArg bias, VectorArg running_mean, VectorArg running_var, BatchNormDims d,
                              bool training, double momentum, double eps, cudaStream_t stream) {
  using M = opmath_t<T>;
  using S = stats_t<T>;
  const int64_t count = d.n * d.l;
  for_each_row(d.c, count, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t c) {
    auto at = [&](int64_t j) { return static_cast<double>(op_value(input[channel_offset(d, c, j)])); };
    auto plus = [](double a, double b) { return a + b; };
    double mean, var;
    if (training) {
      mean = team.reduce(count, 0.0, at, plus) / static_cast<double>(count);
      var = team.reduce(
                count, 0.0,
                [&](int64_t j) {
                  const double diff = at(j) - mean;
                  return diff * diff;
                },
                plus) /
            static_cast<double>(count);
    } else {
      mean = load_or(running_mean, c, 0.0);
      var = load_or(running_var, c, 1.0);
    }
    const double invstd = 1.0 / dmath::sqrt(var + eps);
    const double scale = invstd * load_or(weight, c, 1.0);
    const M a = static_cast<M>(scale), b = static_cast<M>(load_or(bias, c, 0.0) - mean * scale);
    if (team.leader()) {
      if (training && running_mean.data != nullptr) {
        const double n = static_cast<double>(count);
        store_if(running_mean, c, (1 - momentum) * load_or(running_mean, c, 0.0) + momentum * mean);
        store_if(running_var, c, (1 - momentum) * load_or(running_var, c, 1.0) + momentum * var * n / (n - 1));
      }
      save_mean[c] = static_cast<S>(mean);
      save_invstd[c] = static_cast<S>(invstd);
    }
    team.for_each(count, [&](int64_t j) {
      const int64_t i = channel_offset(d, c, j);
      out[i] = convert<T>(static_cast<M>(op_value(input[i])) * a + b);
    });
  });
}

template <class T>
void batch_norm_backward_typed(T* grad_input, VectorArg grad_weight, VectorArg grad_bias, const T* grad_out,
                               const T* input, const stats_t<T>* save_mean, const stats_t<T>* save_invstd,
                               VectorArg weight, BatchNormDims d, bool training, cudaStream_t stream) {
  using M = opmath_t<T>;
  const int64_t count = d.n * d.l;
  for_each_row(d.c, count, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t c) {
    const double mean = static_cast<double>(save_mean[c]), invstd = static_cast<double>(save_invstd[c]);
    auto plus = [](double a, double b) { return a + b; };
    const double sum_dy = team.reduce(
        count, 0.0, [&](int64_t j) { return static_cast<double>(op_value(grad_out[channel_offset(d, c, j)])); }, plus);
    const double sum_dy_xmu = team.reduce(
        count, 0.0,
        [&](int64_t j) {
          const int64_t i = channel_offset(d, c, j);
          return static_cast<double>(op_value(grad_out[i])) * (static_cast<double>(op_value(input[i])) - mean);
        },
        plus);
    if (team.leader()) {
      store_if(grad_weight, c, sum_dy_xmu * invstd);
      store_if(grad_bias, c, sum_dy);
    }
    if (grad_input == nullptr) return;
    // grad_input = k_dy * dy + k_x * (x - mean) + k_0 for the channel.
    const double n = static_cast<double>(count);
    const double scale = invstd * load_or(weight, c, 1.0);
    const M k_dy = static_cast<M>(scale);
    const M k_x = training ? static_cast<M>(-scale * invstd * invstd * sum_dy_xmu / n) : M(0);
    const M k_0 = training ? static_cast<M>(-scale * sum_dy / n) : M(0);
    const M mu = static_cast<M>(mean);
    team.for_each(count, [&](int64_t j) {
      const int64_t i = channel_offset(d, c, j);
      grad_input[i] = convert<T>(k_dy * static_cast<M>(op_value(grad_out[i])) +
                                 k_x * (static_cast<M>(op_value(input[i])) - mu) + k_0);
    });
  });
}

template <class T>
void layer_norm_forward_typed(T* out, stats_t<T>* save_mean, stats_t<T>* save_rstd, const T* input, VectorArg weight,
                              VectorArg bias, int64_t rows, int64_t cols, double eps, cudaStream_t stream) {
  using M = opmath_t<T>;
  using S = stats_t<T>;
  for_each_row(rows, cols, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t r) {
    const T* x = input + r * cols;
    auto at = [&](int64_t i) { return static_cast<double>(op_value(x[i])); };
    auto plus = [](double a, double b) { return a + b; };
    const double mean = team.reduce(cols, 0.0, at, plus) / static_cast<double>(cols);
    const double var = team.reduce(
                           cols, 0.0,
                           [&](int64_t i) {
                             const double diff = at(i) - mean;
                             return diff * diff;
                           },
                           plus) /
                       static_cast<double>(cols);
    const double rstd = 1.0 / dmath::sqrt(var + eps);
    if (team.leader()) {
      save_mean[r] = static_cast<S>(mean);
      save_rstd[r] = static_cast<S>(rstd);
    }
    const M m = static_cast<M>(mean), s = static_cast<M>(rstd);
    T* y = out + r * cols;
    team.for_each(cols, [&](int64_t i) {
      const M w = static_cast<M>(load_or(weight, i, 1.0)), b = static_cast<M>(load_or(bias, i, 0.0));
      y[i] = convert<T>((static_cast<M>(op_value(x[i])) - m) * s * w + b);
    });
  });
}

template <class T>
void layer_norm_backward_typed(T* grad_input, VectorArg grad_weight, VectorArg grad_bias, const T* grad_out,
                               const T* input, const stats_t<T>* save_mean, const stats_t<T>* save_rstd,
                               VectorArg weight, int64_t rows, int64_t cols, cudaStream_t stream) {
  using M = opmath_t<T>;
  if (grad_input != nullptr) {
    // With g = dy * w and xhat = (x - mean) * rstd: grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    for_each_row(rows, cols, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t r) {
      const T* x = input + r * cols;
      const T* dy = grad_out + r * cols;
      const double mu = static_cast<double>(save_mean[r]), s = static_cast<double>(save_rstd[r]);
      auto g_at = [&](int64_t i) { return static_cast<double>(op_value(dy[i])) * load_or(weight, i, 1.0); };
      auto plus = [](double a, double b) { return a + b; };
      const double sum_g = team.reduce(cols, 0.0, g_at, plus);
      const double sum_g_xmu = team.reduce(
          cols, 0.0, [&](int64_t i) { return g_at(i) * (static_cast<double>(op_value(x[i])) - mu); }, plus);
      const M rs = static_cast<M>(s), m = static_cast<M>(mu);
      const M mean_g = static_cast<M>(sum_g / static_cast<double>(cols));
      const M mean_g_xhat = static_cast<M>(sum_g_xmu * s / static_cast<double>(cols));
      T* gx = grad_input + r * cols;
      team.for_each(cols, [&](int64_t i) {
        const M xhat = (static_cast<M>(op_value(x[i])) - m) * rs;
        const M g = static_cast<M>(op_value(dy[i])) * static_cast<M>(load_or(weight, i, 1.0));
        gx[i] = convert<T>(rs * (g - mean_g - xhat * mean_g_xhat));
      });
    });
  }
  if (grad_weight.data == nullptr && grad_bias.data == nullptr) return;
  for_each_index(cols, stream, [=] SG_LAMBDA(int64_t i) {
    double gw = 0, gb = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double g = static_cast<double>(op_value(grad_out[r * cols + i]));
      gw += g * (static_cast<double>(op_value(input[r * cols + i])) - static_cast<double>(save_mean[r])) *
            static_cast<double>(save_rstd[r]);
      gb += g;
    }
    store_if(grad_weight, i, gw);
    store_if(grad_bias, i, gb);
  });
}

}  // namespace

void launch_batch_norm_forward(DType dtype, void* out, void* save_mean, void* save_invstd, const void* input,
                               VectorArg weight, VectorArg bias, VectorArg running_mean, VectorArg running_var,
                               BatchNormDims dims, bool training, double momentum, double eps, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    batch_norm_forward_typed<T>(static_cast<T*>(out), static_cast<stats_t<T>*>(save_mean),
                                static_cast<stats_t<T>*>(save_invstd), static_cast<const T*>(input), weight, bias,
                                running_mean, running_var, dims, training, momentum, eps, stream);
  });
}

void launch_batch_norm_backward(DType dtype, void* grad_input, VectorArg grad_weight, VectorArg grad_bias,
                                const void* grad_out, const void* input, const void* mean, const void* invstd,
                                VectorArg weight, BatchNormDims dims, bool training, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    batch_norm_backward_typed<T>(static_cast<T*>(grad_input), grad_weight, grad_bias, static_cast<const T*>(grad_out),
                                 static_cast<const T*>(input), static_cast<const stats_t<T>*>(mean),
                                 static_cast<const stats_t<T>*>(invstd), weight, dims, training, stream);
  });
}

void launch_layer_norm_forward(DType dtype, void* out, void* save_mean, void* save_rstd, const void* input,
                               VectorArg weight, VectorArg bias, int64_t rows, int64_t cols, double eps,
                               cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    layer_norm_forward_typed<T>(static_cast<T*>(out), static_cast<stats_t<T>*>(save_mean),
                                static_cast<stats_t<T>*>(save_rstd), static_cast<const T*>(input), weight, bias, rows,
                                cols, eps, stream);
  });
}

void launch_layer_norm_backward(DType dtype, void* grad_input, VectorArg grad_weight, VectorArg grad_bias,
                                const void* grad_out, const void* input, const void* mean, const void* rstd,
                                VectorArg weight, int64_t rows, int64_t cols, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    layer_norm_backward_typed<T>(static_cast<T*>(grad_input), grad_weight, grad_bias, static_cast<const T*>(grad_out),
                                 static_cast<const T*>(input), static_cast<const stats_t<T>*>(mean),
                                 static_cast<const stats_t<T>*>(rstd), weight, rows, cols, stream);
  });
}

}  // namespace syncgrad::cuda
