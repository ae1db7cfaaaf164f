// CPU loss kernels over class-dim inputs laid out (N, C, S) with int64 targets (N, S): the fused
// log_softmax + nll (+ label smoothing) forward and backward of cross_entropy, nll_loss, and one_hot.
// Each position's C logits are gathered into a float/double row so Eigen's vectorised exp applies; positions
// are independent, so cross_entropy splits them over the intra-op threads.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <mutex>

#include "tensor/cpu/visit.h"
#include "tensor/ops/loss.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

// The loss accumulation type: double for f64 inputs, float otherwise (matches the losses/lse tensors).
template <class T> using loss_t = std::conditional_t<std::is_same_v<T, double>, double, float>;
template <class M> using Row = Eigen::Map<Eigen::Array<M, Eigen::Dynamic, 1>>;
// The gathered row: Eigen's own allocation is aligned to its packet size, so the vectorised exp splits every
// row the same way (a std::vector's address, and with it how many leading elements take the scalar path,
// depends on the heap's state: results would differ in the last bit from run to run).
template <class M> using RowBuffer = Eigen::Array<M, Eigen::Dynamic, 1>;

bool out_of_range(int64_t t, int64_t classes) { return t < 0 || t >= classes; }

// Positions per parallel chunk so that a chunk covers about 2^14 logits.
int64_t positions_grain(int64_t classes) {
  return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, classes));
}

TargetScan cross_entropy_kernel(const Tensor& losses, const Tensor& lse, const Tensor& logits, const Tensor& target,
                                int64_t ignore_index, double label_smoothing) {
  const int64_t n = logits.sizes()[0], c = logits.sizes()[1], s = logits.sizes()[2];
  const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
  TargetScan scan;
  std::mutex scan_mutex;
  visit_floating(logits.dtype(), "cross_entropy", [&]<class T>() {
    using M = loss_t<T>;
    const T* x = static_cast<const T*>(logits.data_ptr());
    M* loss = static_cast<M*>(losses.data_ptr());
    M* lse_out = static_cast<M*>(lse.data_ptr());
    const M smoothing = static_cast<M>(label_smoothing);
    // Positions are independent: each chunk scans its own, and the scans are merged (the first invalid target
    // by position wins, whatever thread found it).
    parallel_for(n * s, positions_grain(c), [&](int64_t begin, int64_t end) {
      TargetScan chunk;
      RowBuffer<M> buffer(c);
      Row<M> row(buffer.data(), c);
      for (int64_t pos = begin; pos < end; ++pos) {
        const T* first = x + (pos / s) * c * s + pos % s;
        for (int64_t k = 0; k < c; ++k) buffer[k] = static_cast<M>(first[k * s]);
        const M top = row.maxCoeff();
        const M log_total = top + std::log((row - top).exp().sum());
        lse_out[pos] = log_total;
        if (t[pos] == ignore_index) {
          loss[pos] = 0;
          continue;
        }
        if (out_of_range(t[pos], c)) {
          chunk.invalid_position = pos;
          chunk.invalid_value = t[pos];
          break;
        }
        ++chunk.valid;
        M value = (1 - smoothing) * (log_total - buffer[t[pos]]);
        if (smoothing > 0) value += smoothing * (log_total - row.sum() / static_cast<M>(c));
        loss[pos] = value;
      }
      const std::lock_guard<std::mutex> lock(scan_mutex);
      scan.valid += chunk.valid;
      if (chunk.invalid_position >= 0 &&
          (scan.invalid_position < 0 || chunk.invalid_position < scan.invalid_position)) {
        scan.invalid_position = chunk.invalid_position;
        scan.invalid_value = chunk.invalid_value;
      }
    });
  });
  return scan;
}

void cross_entropy_backward_kernel(const Tensor& grad_logits, const Tensor& logits, const Tensor& lse,
                                   const Tensor& target, const Tensor& weights, int64_t ignore_index,
                                   double label_smoothing) {
  const int64_t n = logits.sizes()[0], c = logits.sizes()[1], s = logits.sizes()[2];
  const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
  visit_floating(logits.dtype(), "cross_entropy backward", [&]<class T>() {
    using M = loss_t<T>;
    const T* x = static_cast<const T*>(logits.data_ptr());
    T* gx = static_cast<T*>(grad_logits.data_ptr());
    const M* lse_in = static_cast<const M*>(lse.data_ptr());
    const M* w = static_cast<const M*>(weights.data_ptr());
    const M smoothing = static_cast<M>(label_smoothing);
    parallel_for(n * s, positions_grain(c), [&](int64_t begin, int64_t end) {
      RowBuffer<M> buffer(c);
      Row<M> row(buffer.data(), c);
      for (int64_t pos = begin; pos < end; ++pos) {
        const int64_t offset = (pos / s) * c * s + pos % s;
        const T* first = x + offset;
        T* grad_first = gx + offset;
        if (t[pos] == ignore_index) {
          for (int64_t k = 0; k < c; ++k) grad_first[k * s] = T(0);
          continue;
        }
        for (int64_t k = 0; k < c; ++k) buffer[k] = static_cast<M>(first[k * s]);
        // d loss / d x_k = softmax_k - (1 - s) [k == t] - s / C, scaled by the position's weight.
        row = ((row - lse_in[pos]).exp() - smoothing / static_cast<M>(c)) * w[pos];
        buffer[t[pos]] -= (1 - smoothing) * w[pos];
        for (int64_t k = 0; k < c; ++k) grad_first[k * s] = static_cast<T>(buffer[k]);
      }
    });
  });
}

TargetScan nll_loss_kernel(const Tensor& losses, const Tensor& log_probs, const Tensor& target,
                           int64_t ignore_index) {
  const int64_t n = log_probs.sizes()[0], c = log_probs.sizes()[1], s = log_probs.sizes()[2];
  const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
  TargetScan scan;
  visit_floating(log_probs.dtype(), "nll_loss", [&]<class T>() {
    using M = loss_t<T>;
    const T* x = static_cast<const T*>(log_probs.data_ptr());
    M* loss = static_cast<M*>(losses.data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < s; ++j) {
        const int64_t pos = i * s + j;
        if (t[pos] == ignore_index) {
          loss[pos] = 0;
          continue;
        }
        if (out_of_range(t[pos], c)) {
          scan.invalid_position = pos;
          scan.invalid_value = t[pos];
          return;
        }
        ++scan.valid;
        loss[pos] = -static_cast<M>(x[(i * c + t[pos]) * s + j]);
      }
    }
  });
  return scan;
}

void nll_loss_backward_kernel(const Tensor& grad_in, const Tensor& weights, const Tensor& target,
                              int64_t ignore_index) {
  const int64_t n = grad_in.sizes()[0], c = grad_in.sizes()[1], s = grad_in.sizes()[2];
  const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
  visit_floating(grad_in.dtype(), "nll_loss backward", [&]<class T>() {
    using M = opmath_t<T>;
    T* g = static_cast<T*>(grad_in.data_ptr());
    const T* w = static_cast<const T*>(weights.data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < s; ++j) {
        const int64_t pos = i * s + j;
        if (t[pos] != ignore_index) g[(i * c + t[pos]) * s + j] = static_cast<T>(-static_cast<M>(w[pos]));
      }
    }
  });
}

TargetScan one_hot_kernel(const Tensor& out, const Tensor& indices) {
  const int64_t classes = out.sizes().back();
  const int64_t* idx = static_cast<const int64_t*>(indices.data_ptr());
  int64_t* o = static_cast<int64_t*>(out.data_ptr());
  TargetScan scan;
  for (int64_t i = 0; i < indices.numel(); ++i) {
    if (out_of_range(idx[i], classes)) {
      scan.invalid_position = i;
      scan.invalid_value = idx[i];
      return scan;
    }
    o[i * classes + idx[i]] = 1;
    ++scan.valid;
  }
  return scan;
}

const KernelRegistrar reg_cross_entropy(kernels::cross_entropy, DeviceType::kCPU, &cross_entropy_kernel);
const KernelRegistrar reg_cross_entropy_backward(kernels::cross_entropy_backward, DeviceType::kCPU,
                                                 &cross_entropy_backward_kernel);
const KernelRegistrar reg_nll_loss(kernels::nll_loss, DeviceType::kCPU, &nll_loss_kernel);
const KernelRegistrar reg_nll_loss_backward(kernels::nll_loss_backward, DeviceType::kCPU, &nll_loss_backward_kernel);
const KernelRegistrar reg_one_hot(kernels::one_hot, DeviceType::kCPU, &one_hot_kernel);

}  // namespace
}  // namespace syncgrad::cpu
