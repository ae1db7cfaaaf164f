// Scaled dot-product attention on CUDA, composed from the module's own kernels (batched GEMMs through cuBLAS,
// logsumexp, exp and elementwise kernels): kernels::attention_forward and attention_backward. Unlike the CPU's
// fused kernel (tensor/cpu/attention.cpp) the (B, H, L, S) scores and probabilities are materialised, so memory
// grows with L x S; results agree with the CPU kernel to rounding (tests/cuda/test_cuda_nn_ops.cpp).
#include <limits>

#include "tensor/cuda/register.h"
#include "tensor/ops/attention.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/unary.h"
#include "tensor/ops/views.h"

namespace syncgrad::cuda {
namespace {

// (L, S) on `like`'s device and dtype: 0 where key j <= query i (PyTorch's top-left aligned is_causal), -inf
// above, added to the scores.
Tensor causal_mask(int64_t l, int64_t s, const Tensor& like) {
  Tensor host = empty({l, s}, {.dtype = DType::f64});
  double* mask = host.data_ptr<double>();
  for (int64_t i = 0; i < l; ++i) {
    for (int64_t j = 0; j < s; ++j) mask[i * s + j] = j > i ? -std::numeric_limits<double>::infinity() : 0.0;
  }
  return raw::to(raw::to(host, like.dtype()), like.device());
}

// q (B, H, L, E) @ k^T * scale (+ the causal mask): (B, H, L, S).
Tensor scores(const Tensor& q, const Tensor& k, bool causal, double scale) {
  Tensor s = raw::mul(raw::matmul(q, raw::transpose(k, -2, -1)), Scalar(scale));
  return causal ? raw::add(s, causal_mask(q.size(-2), k.size(-2), s)) : s;
}

void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       bool causal, double scale) {
  const Tensor s = scores(q, k, causal, scale);                             // (B, H, L, S)
  const Tensor row_lse = raw::logsumexp(s, {-1});                          // (B, H, L)
  const Tensor p = raw::exp(raw::sub(s, raw::unsqueeze(row_lse, -1)));     // (B, H, L, S)
  raw::copy_(out, raw::matmul(p, v));                                      // (B, H, L, Ev)
  raw::copy_(lse, row_lse);
}

void attention_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v, const Tensor& grad_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        bool causal, double scale) {
  const Tensor p = raw::exp(raw::sub(scores(q, k, causal, scale), raw::unsqueeze(lse, -1)));  // (B, H, L, S)
  raw::copy_(grad_v, raw::matmul(raw::transpose(p, -2, -1), grad_out));                     // (B, H, S, Ev)
  const Tensor grad_p = raw::matmul(grad_out, raw::transpose(v, -2, -1));                    // (B, H, L, S)
  const Tensor row_dot = raw::sum(raw::mul(grad_out, out), {-1}, true);                     // (B, H, L, 1)
  const Tensor grad_s = raw::mul(p, raw::sub(grad_p, row_dot));                             // (B, H, L, S)
  raw::copy_(grad_q, raw::mul(raw::matmul(grad_s, k), Scalar(scale)));                      // (B, H, L, E)
  raw::copy_(grad_k, raw::mul(raw::matmul(raw::transpose(grad_s, -2, -1), q), Scalar(scale)));  // (B, H, S, E)
}

}  // namespace

void register_attention_kernels() {
  kernels::attention_forward.set(DeviceType::kCUDA, &attention_forward);
  kernels::attention_backward.set(DeviceType::kCUDA, &attention_backward);
}

}  // namespace syncgrad::cuda
