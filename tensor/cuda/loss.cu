// CUDA loss kernels over class-dim inputs (N, C, S) with int64 targets (N, S): the fused log_softmax + nll
// (+ label smoothing) forward of cross_entropy (a block of threads per position) and its backward (a thread
// per logit), nll_loss and its backward, and one_hot. Formulas of tensor/cpu/loss.cpp.
#include <cstdint>
#include <type_traits>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/loss_kernels.h"
#include "tensor/cuda/parallel.cuh"

namespace syncgrad::cuda {
namespace {

// The loss accumulation type: double for f64 inputs, float otherwise (that of the losses/lse tensors).
template <class T>
using loss_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

__host__ __device__ __forceinline__ bool out_of_range(int64_t t, int64_t classes) { return t < 0 || t >= classes; }

template <class T>
void cross_entropy_typed(loss_t<T>* losses, loss_t<T>* lse, const T* logits, const int64_t* target, ClassDims d,
                         int64_t ignore_index, double label_smoothing, int64_t* scan, cudaStream_t stream) {
  using M = loss_t<T>;
  const M smoothing = static_cast<M>(label_smoothing);
  const M lowest = -infinity<M>();
  for_each_row(d.n * d.s, d.c, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t pos) {
    const T* first = logits + (pos / d.s) * d.c * d.s + pos % d.s;
    auto at = [&](int64_t k) { return static_cast<M>(op_value(first[k * d.s])); };
    auto plus = [](M a, M b) { return a + b; };
    const M top = team.reduce(d.c, lowest, at, [](M a, M b) { return a < b ? b : a; });
    const M total = team.reduce(
        d.c, M(0), [&](int64_t k) { return dmath::exp(at(k) - top); }, plus);
    const M log_total = top + dmath::log(total);
    const M mean = smoothing > M(0) ? team.reduce(d.c, M(0), at, plus) / static_cast<M>(d.c) : M(0);
    if (!team.leader()) return;
    lse[pos] = log_total;
    const int64_t t = target[pos];
    losses[pos] = M(0);
    if (t == ignore_index) return;
    if (out_of_range(t, d.c)) {
      atomic_min(&scan[0], pos);
      return;
    }
    atomic_count(&scan[1], 1);
    M value = (1 - smoothing) * (log_total - at(t));
    if (smoothing > M(0)) value += smoothing * (log_total - mean);
    losses[pos] = value;
  });
}

template <class T>
void cross_entropy_backward_typed(T* grad_logits, const T* logits, const loss_t<T>* lse, const int64_t* target,
                                  const loss_t<T>* weights, ClassDims d, int64_t ignore_index, double label_smoothing,
                                  cudaStream_t stream) {
  using M = loss_t<T>;
  const M smoothing = static_cast<M>(label_smoothing);
  const M uniform = smoothing / static_cast<M>(d.c);
  for_each_index(d.n * d.c * d.s, stream, [=] SG_LAMBDA(int64_t e) {
    const int64_t i = e / (d.c * d.s), k = (e / d.s) % d.c, pos = i * d.s + e % d.s;
    const int64_t t = target[pos];
    if (t == ignore_index) {
      grad_logits[e] = convert<T>(M(0));
      return;
    }
    const M w = weights[pos];
    M v = (dmath::exp(static_cast<M>(op_value(logits[e])) - lse[pos]) - uniform) * w;
    if (k == t) v -= (1 - smoothing) * w;
    grad_logits[e] = convert<T>(v);
  });
}

template <class T>
void nll_loss_typed(loss_t<T>* losses, const T* log_probs, const int64_t* target, ClassDims d, int64_t ignore_index,
                    int64_t* scan, cudaStream_t stream) {
  using M = loss_t<T>;
  for_each_index(d.n * d.s, stream, [=] SG_LAMBDA(int64_t pos) {
    const int64_t i = pos / d.s, j = pos % d.s, t = target[pos];
    losses[pos] = M(0);
    if (t == ignore_index) return;
    if (out_of_range(t, d.c)) {
      atomic_min(&scan[0], pos);
      return;
    }
    atomic_count(&scan[1], 1);
    losses[pos] = -static_cast<M>(op_value(log_probs[(i * d.c + t) * d.s + j]));
  });
}

template <class T>
void nll_loss_backward_typed(T* grad_in, const T* weights, const int64_t* target, ClassDims d, int64_t ignore_index,
                             cudaStream_t stream) {
  using M = opmath_t<T>;
  for_each_index(d.n * d.s, stream, [=] SG_LAMBDA(int64_t pos) {
    const int64_t i = pos / d.s, j = pos % d.s, t = target[pos];
    if (t == ignore_index || out_of_range(t, d.c)) return;
    grad_in[(i * d.c + t) * d.s + j] = convert<T>(-static_cast<M>(op_value(weights[pos])));
  });
}

}  // namespace

void launch_cross_entropy(DType dtype, void* losses, void* lse, const void* logits, const int64_t* target,
                          ClassDims dims, int64_t ignore_index, double label_smoothing, int64_t* scan,
                          cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    cross_entropy_typed<T>(static_cast<loss_t<T>*>(losses), static_cast<loss_t<T>*>(lse), static_cast<const T*>(logits),
                           target, dims, ignore_index, label_smoothing, scan, stream);
  });
}

void launch_cross_entropy_backward(DType dtype, void* grad_logits, const void* logits, const void* lse,
                                   const int64_t* target, const void* weights, ClassDims dims, int64_t ignore_index,
                                   double label_smoothing, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    cross_entropy_backward_typed<T>(static_cast<T*>(grad_logits), static_cast<const T*>(logits),
                                    static_cast<const loss_t<T>*>(lse), target, static_cast<const loss_t<T>*>(weights),
                                    dims, ignore_index, label_smoothing, stream);
  });
}

void launch_nll_loss(DType dtype, void* losses, const void* log_probs, const int64_t* target, ClassDims dims,
                     int64_t ignore_index, int64_t* scan, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    nll_loss_typed<T>(static_cast<loss_t<T>*>(losses), static_cast<const T*>(log_probs), target, dims, ignore_index,
                      scan, stream);
  });
}

void launch_nll_loss_backward(DType dtype, void* grad_in, const void* weights, const int64_t* target, ClassDims dims,
                              int64_t ignore_index, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    nll_loss_backward_typed<T>(static_cast<T*>(grad_in), static_cast<const T*>(weights), target, dims, ignore_index,
                               stream);
  });
}

void launch_one_hot(int64_t* out, const int64_t* indices, int64_t count, int64_t classes, int64_t* scan,
                    cudaStream_t stream) {
  for_each_index(count, stream, [=] SG_LAMBDA(int64_t i) {
    const int64_t index = indices[i];
    if (out_of_range(index, classes)) {
      atomic_min(&scan[0], i);
      return;
    }
    out[i * classes + index] = 1;
    atomic_count(&scan[1], 1);
  });
}

}  // namespace syncgrad::cuda
