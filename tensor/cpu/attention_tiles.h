// The float32 per-head attention of tensor/cpu/attention.cpp on conv_gemm.h's register tiles, for head sizes
// that are whole AVX-512 vectors (E and Ev multiples of 16). Same blocking and math as the Eigen version beside
// it: query blocks of `block` rows; a block's scores are computed against its visible keys rounded up to a
// whole vector (kᵀ and vᵀ are packed once per head, zero-padded, and the extra score columns are never read).
// On GPT-sized heads (32 channels, 128 positions), where Eigen's per-call packing dominates such small
// products, a layer's forward + backward went from 27.5 to 24 ms (batch 64, 4 heads, one core).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "tensor/cpu/conv_gemm.h"

namespace syncgrad::cpu::attention_tiles {

using conv_gemm::StridedA;
constexpr int64_t kLanes = conv_gemm::kLanes<float>;

// One head's operands: row-major matrices with a row stride each (their columns are unit-strided).
struct Rows {
  float* data;
  int64_t rows, cols, stride;
  float* row(int64_t i) const { return data + i * stride; }
};

inline bool fits(int64_t e, int64_t ev) { return e % kLanes == 0 && ev % kLanes == 0; }

inline int64_t padded(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// Scratch buffers are Eigen allocations, aligned to its packet size: the vectorised exp then splits rows the
// same way every run (a std::vector's alignment varies with the heap's state).
using Buffer = Eigen::ArrayXf;

// dst (cols, padded(rows)) = srcᵀ, zero beyond src's rows.
inline void pack_transposed(const Rows& src, Buffer& dst) {
  const int64_t width = padded(src.rows);
  dst.setZero(src.cols * width);
  float* to = dst.data();
  for (int64_t r0 = 0; r0 < src.rows; r0 += kLanes) {  // kLanes source rows at a time: whole lines of dst
    const int64_t r1 = std::min(src.rows, r0 + kLanes);
    for (int64_t c = 0; c < src.cols; ++c) {
      for (int64_t r = r0; r < r1; ++r) to[c * width + r] = src.data[r * src.stride + c];
    }
  }
}

// p[0, n) = exp(p * scale - shift) on whole vectors: the lanes up to padded(n) are computed too (the rows are
// padded to whole vectors and the caller overwrites or never reads those lanes), so no element takes a scalar
// path (Eigen's array exp leaves a row's tail to glibc's expf, a few percent of a GPT step).
inline void exp_scaled_shifted(float* p, int64_t n, float scale, float shift) {
  using namespace Eigen::internal;
  using Packet = packet_traits<float>::type;
  constexpr int64_t kPacket = packet_traits<float>::size;
  const Packet scale_packet = pset1<Packet>(scale), shift_packet = pset1<Packet>(shift);
  for (int64_t i = 0; i < padded(n); i += kPacket) {
    pstoreu(p + i, pexp(psub(pmul(ploadu<Packet>(p + i), scale_packet), shift_packet)));
  }
}

// Per-head scratch, reused across heads.
struct Scratch {
  Buffer k_t, v_t, probs, grad_scores;
};

// scores (rows, padded(keys)) = q[r0 .. r0 + rows) kᵀ; the caller reads the first `keys` columns.
inline void scores(const Rows& q, int64_t r0, int64_t rows, const Buffer& k_t, int64_t width, int64_t keys,
                   float* out) {
  conv_gemm::gemm<float, 6, 4>(rows, padded(keys), q.cols, StridedA<float>{q.row(r0), q.stride, 1}, k_t.data(), width,
                               out, width);
}

// out[r0 ..) = softmax(scale q kᵀ + mask) v; lse[r] = log-sum-exp of row r's scaled, visible scores.
template <class VisibleKeys, class BlockKeys>
void forward(const Rows& out, float* lse, const Rows& q, const Rows& k, const Rows& v, float scale, int64_t block,
             VisibleKeys visible_keys, BlockKeys block_keys, Scratch& s) {
  const int64_t width = padded(k.rows);
  pack_transposed(k, s.k_t);
  s.probs.resize(block * width);
  for (int64_t r0 = 0; r0 < q.rows; r0 += block) {
    const int64_t rows = std::min(block, q.rows - r0), cols = block_keys(r0, rows);
    scores(q, r0, rows, s.k_t, width, cols, s.probs.data());
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t visible = visible_keys(r0 + i);
      Eigen::Map<Eigen::ArrayXf> row(s.probs.data() + i * width, cols);
      auto seen = row.head(visible);
      const float top = (scale >= 0 ? seen.maxCoeff() : seen.minCoeff()) * scale;  // the largest scaled score
      exp_scaled_shifted(row.data(), visible, scale, top);
      const float total = seen.sum();
      seen *= 1.0f / total;
      row.tail(cols - visible).setZero();
      lse[r0 + i] = top + std::log(total);
    }
    conv_gemm::gemm<float, 12, 2>(rows, v.cols, cols, StridedA<float>{s.probs.data(), width, 1}, v.data, v.stride,
                                  out.row(r0), out.stride);
  }
}

template <class VisibleKeys, class BlockKeys>
void backward(const Rows& grad_q, const Rows& grad_k, const Rows& grad_v, const Rows& grad_out, const Rows& q,
              const Rows& k, const Rows& v, const Rows& out, const float* lse, float scale, int64_t block,
              VisibleKeys visible_keys, BlockKeys block_keys, Scratch& s) {
  const int64_t width = padded(k.rows);
  pack_transposed(k, s.k_t);
  pack_transposed(v, s.v_t);
  s.probs.resize(block * width);
  s.grad_scores.resize(block * width);
  for (int64_t r = 0; r < k.rows; ++r) {
    std::fill_n(grad_k.row(r), grad_k.cols, 0.0f);
    std::fill_n(grad_v.row(r), grad_v.cols, 0.0f);
  }
  for (int64_t r0 = 0; r0 < q.rows; r0 += block) {
    const int64_t rows = std::min(block, q.rows - r0), cols = block_keys(r0, rows);
    float* p = s.probs.data();
    float* ds = s.grad_scores.data();
    scores(q, r0, rows, s.k_t, width, cols, p);
    // d loss / d probabilities = dO vᵀ
    conv_gemm::gemm<float, 6, 4>(rows, padded(cols), grad_out.cols,
                                 StridedA<float>{grad_out.row(r0), grad_out.stride, 1}, s.v_t.data(), width, ds, width);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t visible = visible_keys(r0 + i);
      Eigen::Map<Eigen::ArrayXf> pr(p + i * width, cols), dr(ds + i * width, cols);
      exp_scaled_shifted(pr.data(), visible, scale, lse[r0 + i]);
      pr.tail(cols - visible).setZero();
      // softmax backward: dS = P (dP - sum(dP P)), with sum(dP P) = dO . O for the row.
      const float row_dot = Eigen::Map<const Eigen::ArrayXf>(grad_out.row(r0 + i), grad_out.cols)
                                .matrix()
                                .dot(Eigen::Map<const Eigen::ArrayXf>(out.row(r0 + i), out.cols).matrix());
      dr = pr * (dr - row_dot) * scale;
    }
    const StridedA<float> p_t{p, 1, width}, ds_rows{ds, width, 1}, ds_t{ds, 1, width};
    conv_gemm::gemm<float, 12, 2>(cols, grad_v.cols, rows, p_t, grad_out.row(r0), grad_out.stride, grad_v.data,
                                  grad_v.stride, {.accumulate = true});
    conv_gemm::gemm<float, 12, 2>(rows, grad_q.cols, cols, ds_rows, k.data, k.stride, grad_q.row(r0), grad_q.stride);
    conv_gemm::gemm<float, 12, 2>(cols, grad_k.cols, rows, ds_t, q.row(r0), q.stride, grad_k.data, grad_k.stride,
                                  {.accumulate = true});
  }
}

}  // namespace syncgrad::cpu::attention_tiles
