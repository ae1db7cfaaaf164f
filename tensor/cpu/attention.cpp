// CPU fused scaled dot-product attention, forward and backward; (batch, head) pairs run in parallel. Query rows go
// in blocks of kBlockRows; a block's scores against the keys it may see form a small row-major matrix that
// stays in cache, so the whole softmax(q k^T * scale) v runs on GEMMs over the operands' own strided memory:
// the register tiles of attention_tiles.h for float32 heads of whole vectors, Eigen otherwise (float64, odd
// head sizes). Causal blocks stop at their last row's key: the masked upper triangle is skipped, not computed.
// The backward rebuilds each block's probabilities as exp(scores - lse) instead of storing them.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // g++ 12 inside Eigen's inlined AVX-512 GEMM

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "tensor/cpu/attention_tiles.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/attention.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

constexpr int64_t kBlockRows = 32;

template <class M> using RowMatrix = Eigen::Matrix<M, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class M> using ConstRows = Eigen::Map<const RowMatrix<M>, 0, Eigen::OuterStride<>>;
template <class M> using Rows = Eigen::Map<RowMatrix<M>, 0, Eigen::OuterStride<>>;

// Head (b, h) of a (B, H, rows, cols) tensor with a unit last stride, as a row-major matrix over its memory.
template <class M>
Rows<M> head_of(const Tensor& t, int64_t b, int64_t h) {
  M* base = static_cast<M*>(t.data_ptr()) + b * t.stride(0) + h * t.stride(1);
  return Rows<M>(base, t.size(2), t.size(3), Eigen::OuterStride<>(std::max<int64_t>(t.stride(2), 1)));
}

template <class M>
ConstRows<M> const_head_of(const Tensor& t, int64_t b, int64_t h) {
  const M* base = static_cast<const M*>(t.data_ptr()) + b * t.stride(0) + h * t.stride(1);
  return ConstRows<M>(base, t.size(2), t.size(3), Eigen::OuterStride<>(std::max<int64_t>(t.stride(2), 1)));
}

// Head (b, h) for the float32 tile path.
attention_tiles::Rows rows_of(const Tensor& t, int64_t b, int64_t h) {
  return {static_cast<float*>(t.data_ptr()) + b * t.stride(0) + h * t.stride(1), t.size(2), t.size(3),
          std::max<int64_t>(t.stride(2), 1)};
}

// The keys query row `row` may see.
inline int64_t visible_keys(int64_t row, int64_t keys, bool causal) { return causal ? std::min(row + 1, keys) : keys; }

// The keys any row of the block starting at r0 with `rows` rows may see.
inline int64_t block_keys(int64_t r0, int64_t rows, int64_t keys, bool causal) {
  return causal ? std::min(r0 + rows, keys) : keys;
}

// The Eigen path's per-thread scratch: one block's probabilities and their gradient.
template <class M>
struct EigenScratch {
  RowMatrix<M> probs, grad_scores;
  void reserve(int64_t rows, int64_t cols) {
    if (probs.rows() < rows || probs.cols() < cols) {
      probs.resize(rows, cols);
      grad_scores.resize(rows, cols);
    }
  }
};

template <class M>
void forward_head(Rows<M> out, M* lse, ConstRows<M> q, ConstRows<M> k, ConstRows<M> v, bool causal, M scale,
                  EigenScratch<M>& scratch) {
  const int64_t len = q.rows(), keys = k.rows();
  scratch.reserve(std::min(kBlockRows, len), keys);
  for (int64_t r0 = 0; r0 < len; r0 += kBlockRows) {
    const int64_t rows = std::min(kBlockRows, len - r0), cols = block_keys(r0, rows, keys, causal);
    auto p = scratch.probs.topLeftCorner(rows, cols);  // (rows, cols) scores, then probabilities
    p.noalias() = scale * q.middleRows(r0, rows) * k.topRows(cols).transpose();
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t visible = visible_keys(r0 + i, keys, causal);
      auto row = p.row(i).head(visible).array();
      const M top = row.maxCoeff();
      row = (row - top).exp();
      const M total = row.sum();
      row *= M(1) / total;
      p.row(i).tail(cols - visible).setZero();
      lse[r0 + i] = top + std::log(total);
    }
    out.middleRows(r0, rows).noalias() = p * v.topRows(cols);
  }
}

template <class M>
void backward_head(Rows<M> grad_q, Rows<M> grad_k, Rows<M> grad_v, ConstRows<M> grad_out, ConstRows<M> q,
                   ConstRows<M> k, ConstRows<M> v, ConstRows<M> out, const M* lse, bool causal, M scale,
                   EigenScratch<M>& scratch) {
  const int64_t len = q.rows(), keys = k.rows();
  scratch.reserve(std::min(kBlockRows, len), keys);
  grad_k.setZero();
  grad_v.setZero();
  for (int64_t r0 = 0; r0 < len; r0 += kBlockRows) {
    const int64_t rows = std::min(kBlockRows, len - r0), cols = block_keys(r0, rows, keys, causal);
    auto g = grad_out.middleRows(r0, rows);             // (rows, Ev)
    auto p = scratch.probs.topLeftCorner(rows, cols);   // (rows, cols)
    auto ds = scratch.grad_scores.topLeftCorner(rows, cols);
    p.noalias() = scale * q.middleRows(r0, rows) * k.topRows(cols).transpose();
    ds.noalias() = g * v.topRows(cols).transpose();  // d loss / d probabilities
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t visible = visible_keys(r0 + i, keys, causal);
      p.row(i).head(visible) = (p.row(i).head(visible).array() - lse[r0 + i]).exp().matrix();
      p.row(i).tail(cols - visible).setZero();
      // softmax backward: dS = P * (dP - sum(dP * P)), and sum(dP * P) = dO . O for the row.
      const M row_dot = g.row(i).dot(out.row(r0 + i));
      ds.row(i) = (p.row(i).array() * (ds.row(i).array() - row_dot) * scale).matrix();
    }
    grad_v.topRows(cols).noalias() += p.transpose() * g;
    grad_q.middleRows(r0, rows).noalias() = ds * k.topRows(cols);
    grad_k.topRows(cols).noalias() += ds.transpose() * q.middleRows(r0, rows);
  }
}

// Runs body(b, h, i, scratch) for every (batch, head) pair i = b * H + h of q, in parallel; each thread's
// chunk of pairs shares one scratch of either path.
template <class M, class Body>
void for_each_head(const Tensor& q, Body&& body) {
  const int64_t heads = q.size(1);
  parallel_for(q.size(0) * heads, 1, [&](int64_t begin, int64_t end) {
    EigenScratch<M> eigen_scratch;
    attention_tiles::Scratch tile_scratch;
    for (int64_t i = begin; i < end; ++i) body(i / heads, i % heads, i, eigen_scratch, tile_scratch);
  });
}

// What the forward and backward kernels share: the dtype dispatch (float32 and float64; `kernel_name` in the
// error otherwise), the choice of the register tiles (float32 with small head sizes) or Eigen, the causal key
// ranges, and the loop over heads. body.operator()<T>(b, h, head index, tiles, visible, block, scratches).
template <class Body>
void run_attention(const char* op, const char* kernel_name, const Tensor& q, const Tensor& k, const Tensor& v,
                   bool causal, Body&& body) {
  visit_floating(q.dtype(), op, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const int64_t keys = k.size(2);
      const bool tiles = std::is_same_v<T, float> && attention_tiles::fits(q.size(3), v.size(3));
      auto visible = [=](int64_t row) { return visible_keys(row, keys, causal); };
      auto block = [=](int64_t r0, int64_t rows) { return block_keys(r0, rows, keys, causal); };
      for_each_head<T>(q, [&](int64_t b, int64_t h, int64_t i, EigenScratch<T>& eigen_scratch,
                              attention_tiles::Scratch& tile_scratch) {
        body.template operator()<T>(b, h, i, tiles, visible, block, eigen_scratch, tile_scratch);
      });
    } else {
      unsupported_dtype(kernel_name, q.dtype(), "float32, float64");
    }
  });
}

void attention_forward_kernel(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                              bool causal, double scale) {
  const int64_t len = q.size(2);
  run_attention("scaled_dot_product_attention", "scaled_dot_product_attention kernel", q, k, v, causal,
                [&]<class T>(int64_t b, int64_t h, int64_t i, bool tiles, auto& visible, auto& block,
                             EigenScratch<T>& eigen_scratch, attention_tiles::Scratch& tile_scratch) {
                  if (tiles) {
                    attention_tiles::forward(rows_of(out, b, h), static_cast<float*>(lse.data_ptr()) + i * len,
                                             rows_of(q, b, h), rows_of(k, b, h), rows_of(v, b, h),
                                             static_cast<float>(scale), kBlockRows, visible, block, tile_scratch);
                  } else {
                    forward_head<T>(head_of<T>(out, b, h), static_cast<T*>(lse.data_ptr()) + i * len,
                                    const_head_of<T>(q, b, h), const_head_of<T>(k, b, h), const_head_of<T>(v, b, h),
                                    causal, static_cast<T>(scale), eigen_scratch);
                  }
                });
}

void attention_backward_kernel(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v,
                               const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& out, const Tensor& lse, bool causal, double scale) {
  const int64_t len = q.size(2);
  run_attention(
      "scaled_dot_product_attention backward", "scaled_dot_product_attention backward kernel", q, k, v, causal,
      [&]<class T>(int64_t b, int64_t h, int64_t i, bool tiles, auto& visible, auto& block,
                   EigenScratch<T>& eigen_scratch, attention_tiles::Scratch& tile_scratch) {
        if (tiles) {
          attention_tiles::backward(rows_of(grad_q, b, h), rows_of(grad_k, b, h), rows_of(grad_v, b, h),
                                    rows_of(grad_out, b, h), rows_of(q, b, h), rows_of(k, b, h), rows_of(v, b, h),
                                    rows_of(out, b, h), static_cast<const float*>(lse.data_ptr()) + i * len,
                                    static_cast<float>(scale), kBlockRows, visible, block, tile_scratch);
        } else {
          backward_head<T>(head_of<T>(grad_q, b, h), head_of<T>(grad_k, b, h), head_of<T>(grad_v, b, h),
                           const_head_of<T>(grad_out, b, h), const_head_of<T>(q, b, h), const_head_of<T>(k, b, h),
                           const_head_of<T>(v, b, h), const_head_of<T>(out, b, h),
                           static_cast<const T*>(lse.data_ptr()) + i * len, causal, static_cast<T>(scale),
                           eigen_scratch);
        }
      });
}

const KernelRegistrar reg_attention_forward(kernels::attention_forward, DeviceType::kCPU, &attention_forward_kernel);
const KernelRegistrar reg_attention_backward(kernels::attention_backward, DeviceType::kCPU,
                                             &attention_backward_kernel);

}  // namespace
}  // namespace syncgrad::cpu
