// The gradients of q, k and v split from one fused projection, as GPT's attention splits them: the attention
// backward writes them side by side into one buffer laid out as the projection, the split's backward takes
// that buffer as the projection's gradient without copying, and the values equal those of unpacked inputs.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "syncgrad.h"

using namespace syncgrad;

namespace {

constexpr int64_t kBatch = 2, kLen = 19, kHeads = 3, kDim = 4, kWidth = kHeads * kDim;

Tensor random_of(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, {}, &gen);
}

// (B, H, T, D) heads of one (B, T, C) piece.
Tensor heads_of(const Tensor& piece) { return transpose(view(piece, {kBatch, kLen, kHeads, kDim}), 1, 2); }

struct ProjectionGrad {
  Tensor grad;       // the projection's
  bool shares_q;     // whether the split's backward passed on the buffer q's gradient was in
};

// The gradient of sum(attention(q, k, v) * weights) for the projection qkv, split as GPT does, or with q, k and
// v copied out of it first (`unpacked`).
ProjectionGrad projection_grad(bool unpacked) {
  Tensor qkv = random_of({kBatch, kLen, 3 * kWidth}, 1).requires_grad_();
  std::vector<Tensor> parts = split(qkv, kWidth, 2);
  std::shared_ptr<Storage> q_grad_storage, projection_grad_storage;
  parts[0].register_hook([&](const Tensor& g) {
    q_grad_storage = g.impl()->storage();
    return Tensor();
  });
  qkv.register_hook([&](const Tensor& g) {
    projection_grad_storage = g.impl()->storage();
    return Tensor();
  });
  if (unpacked) {
    for (Tensor& part : parts) part = mul(part, 1.0);
  }
  Tensor y = scaled_dot_product_attention(heads_of(parts[0]), heads_of(parts[1]), heads_of(parts[2]), true);
  sum(mul(y, random_of(y.sizes(), 2))).backward();
  REQUIRE(q_grad_storage);
  return {qkv.grad(), q_grad_storage == projection_grad_storage};
}

}  // namespace

TEST_CASE("attention's backward writes the gradients of a split projection side by side, in its layout") {
  const Tensor qkv = random_of({kBatch, kLen, 3 * kWidth}, 3);
  auto head = [&](int64_t i) { return raw::transpose(raw::view(raw::narrow(qkv, 2, i * kWidth, kWidth),
                                                               {kBatch, kLen, kHeads, kDim}), 1, 2); };
  const raw::AttentionResult forward = raw::scaled_dot_product_attention(head(0), head(1), head(2), true);
  const Tensor grad_out = random_of(forward.out.sizes(), 4);
  const raw::AttentionGrads packed =
      raw::scaled_dot_product_attention_backward(grad_out, head(0), head(1), head(2), forward, true);
  CHECK(packed.q.impl()->storage() == packed.k.impl()->storage());
  CHECK(packed.q.impl()->storage() == packed.v.impl()->storage());
  CHECK(packed.k.storage_offset() == packed.q.storage_offset() + kWidth);
  CHECK(packed.v.storage_offset() == packed.q.storage_offset() + 2 * kWidth);
  CHECK(packed.q.strides() == head(0).strides());
  // The same inputs in three buffers of their own: gradients in buffers of their own, the same values.
  const Tensor q = raw::contiguous(head(0)), k = raw::contiguous(head(1)), v = raw::contiguous(head(2));
  const raw::AttentionGrads separate = raw::scaled_dot_product_attention_backward(grad_out, q, k, v, forward, true);
  CHECK(separate.q.impl()->storage() != separate.k.impl()->storage());
  CHECK(to_vector<float>(packed.q) == to_vector<float>(separate.q));
  CHECK(to_vector<float>(packed.k) == to_vector<float>(separate.k));
  CHECK(to_vector<float>(packed.v) == to_vector<float>(separate.v));
}

TEST_CASE("split's backward takes the side-by-side gradients as the projection's, with the unpacked values") {
  const ProjectionGrad packed = projection_grad(false), unpacked = projection_grad(true);
  CHECK(packed.shares_q);
  CHECK_FALSE(unpacked.shares_q);
  CHECK(packed.grad.sizes() == Shape{kBatch, kLen, 3 * kWidth});
  CHECK(packed.grad.is_contiguous());
  CHECK(to_vector<float>(packed.grad) == to_vector<float>(unpacked.grad));
}

TEST_CASE("split's backward still assembles gradients that are not side by side, zeros for a piece with none") {
  Tensor x = random_of({4, 6}, 5).requires_grad_();
  std::vector<Tensor> parts = split(x, 2, 1);  // three (4, 2)
  sum(add(mul(parts[0], 2.0), mul(parts[2], 3.0))).backward();
  const std::vector<float> g = to_vector<float>(x.grad());
  for (int64_t row = 0; row < 4; ++row) {
    for (int64_t col = 0; col < 6; ++col) {
      CHECK(g[row * 6 + col] == (col < 2 ? 2.0f : col < 4 ? 0.0f : 3.0f));
    }
  }
}
