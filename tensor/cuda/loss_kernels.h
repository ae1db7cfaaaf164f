// Launchers of the loss kernels (loss.cu), called by loss_ops.cpp. Class-dim inputs are contiguous (N, C, S)
// with int64 targets (N, S); per-position arrays (losses, lse, weights) are (N, S) of the loss type: double
// for f64 inputs, float otherwise. Target checks land in `scan`, two int64 on the device: [0] the smallest
// position holding an out-of-range target (left alone when there is none), [1] += the targets not ignored.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace syncgrad::cuda {

// Loss sizes: N samples, C classes, S positions per sample.
struct ClassDims {
  int64_t n = 0, c = 0, s = 0;
};

// lse = logsumexp over C; loss = (1 - smoothing)(lse - x_t) + smoothing (lse - mean_c x_c), 0 when ignored.
void launch_cross_entropy(DType dtype, void* losses, void* lse, const void* logits, const int64_t* target,
                          ClassDims dims, int64_t ignore_index, double label_smoothing, int64_t* scan,
                          cudaStream_t stream);
// grad_logits (N, C, S, dtype) = weights * (softmax - (1 - s) one_hot - s / C); 0 on ignored positions.
void launch_cross_entropy_backward(DType dtype, void* grad_logits, const void* logits, const void* lse,
                                   const int64_t* target, const void* weights, ClassDims dims, int64_t ignore_index,
                                   double label_smoothing, cudaStream_t stream);
// losses = -log_probs[n, t, s], 0 when ignored.
void launch_nll_loss(DType dtype, void* losses, const void* log_probs, const int64_t* target, ClassDims dims,
                     int64_t ignore_index, int64_t* scan, cudaStream_t stream);
// grad_in (N, C, S, dtype, zeroed)[n, t, s] = -weights[n, s] (weights of dtype) unless ignored.
void launch_nll_loss_backward(DType dtype, void* grad_in, const void* weights, const int64_t* target, ClassDims dims,
                              int64_t ignore_index, cudaStream_t stream);
// out (count, classes) int64, zeroed: out[i, indices[i]] = 1.
void launch_one_hot(int64_t* out, const int64_t* indices, int64_t count, int64_t classes, int64_t* scan,
                    cudaStream_t stream);

}  // namespace syncgrad::cuda
