// Raw scaled dot-product attention front-ends: shape and dtype checks, the compute dtype (f32, or f64), output
// allocation in the (B, L, H, E) memory layout (the gradients of q, k and v split from one fused projection in
// that projection's layout), and dispatch.
#include "tensor/ops/attention.h"

#include <array>
#include <cmath>

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double)>
    attention_forward("scaled_dot_product_attention");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&, const Tensor&, const Tensor&, bool, double)>
    attention_backward("scaled_dot_product_attention backward");
}  // namespace kernels

namespace raw {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

void check_operands(const Tensor& q, const Tensor& k, const Tensor& v) {
  const std::string shapes =
      "q " + shape_str(q.sizes()) + ", k " + shape_str(k.sizes()) + ", v " + shape_str(v.sizes());
  SYNCGRAD_CHECK(q.dim() >= 3 && q.dim() <= 4 && k.dim() == q.dim() && v.dim() == q.dim(), ShapeError, kOp,
                 ": expected q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev) (or 3-D, without B), got ", shapes);
  for (int64_t d = 0; d < q.dim() - 2; ++d) {
    SYNCGRAD_CHECK(k.size(d) == q.size(d) && v.size(d) == q.size(d), ShapeError, kOp,
                   ": the leading (batch, head) dims differ: ", shapes);
  }
  SYNCGRAD_CHECK(k.size(-1) == q.size(-1) && v.size(-2) == k.size(-2), ShapeError, kOp,
                 ": q and k need the same last dim E, k and v the same key count S: ", shapes);
  SYNCGRAD_CHECK(k.size(-2) != 0 || q.size(-2) <= 0, ShapeError, kOp, ": no keys to attend to (S = 0): ", shapes);
  SYNCGRAD_CHECK(is_floating(q.dtype()) && k.dtype() == q.dtype() && v.dtype() == q.dtype(), DTypeError, kOp,
                 ": q, k and v need one floating dtype, got ", dtype_name(q.dtype()), ", ", dtype_name(k.dtype()), ", ",
                 dtype_name(v.dtype()));
  check_same_device(kOp, q, k);
  check_same_device(kOp, q, v);
}

DType compute_dtype(DType input) { return input == DType::f64 ? DType::f64 : DType::f32; }

// t as a 4-D tensor in `dtype` with a unit last stride (a view when it already is one).
Tensor prepared(const Tensor& t, DType dtype) {
  Tensor four_d = t.dim() == 3 ? unsqueeze(t, 0) : t;
  Tensor typed = to(four_d, dtype);
  return typed.stride(-1) == 1 ? typed : contiguous(typed);
}

// An uninitialised (B, H, L, E) tensor whose memory is laid out (B, L, H, E).
Tensor empty_heads_last(int64_t batch, int64_t heads, int64_t len, int64_t width, DType dtype, Device device) {
  return permute(empty({batch, len, heads, width}, {.dtype = dtype, .device = device}), {0, 2, 1, 3});
}

// Whether q, k and v (4-D, the compute dtype) are the (B, H, L, E) heads of one (B, L, 3 * H * E) buffer that
// holds each position's q, k and v side by side, as splitting a fused qkv projection leaves them.
bool split_from_one_projection(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t width = q.size(1) * q.size(3);
  const Shape packed_strides{q.size(2) * 3 * width, q.size(3), 3 * width, 1};
  return q.impl()->storage() == k.impl()->storage() && q.impl()->storage() == v.impl()->storage() &&
         k.sizes() == q.sizes() && v.sizes() == q.sizes() && q.strides() == packed_strides &&
         k.strides() == packed_strides && v.strides() == packed_strides &&
         k.storage_offset() == q.storage_offset() + width && v.storage_offset() == q.storage_offset() + 2 * width;
}

// Uninitialised gradients for q, k and v: each (B, H, L, E) in the (B, L, H, E) layout, or, when the three were
// split from one projection, views of one (B, L, 3 * H * E) buffer laid out as they are, so that the split's
// backward takes that buffer as its input's gradient instead of copying three into one.
std::array<Tensor, 3> empty_qkv_grads(const Tensor& q, const Tensor& k, const Tensor& v) {
  if (split_from_one_projection(q, k, v)) {
    const int64_t width = q.size(1) * q.size(3);
    Tensor packed = empty({q.size(0), q.size(2), 3 * width}, {.dtype = q.dtype(), .device = q.device()});
    return {as_strided(packed, q.sizes(), q.strides(), 0), as_strided(packed, q.sizes(), q.strides(), width),
            as_strided(packed, q.sizes(), q.strides(), 2 * width)};
  }
  auto heads_last = [](const Tensor& t) {
    return empty_heads_last(t.size(0), t.size(1), t.size(2), t.size(3), t.dtype(), t.device());
  };
  return {heads_last(q), heads_last(k), heads_last(v)};
}

// A 4-D result back in the caller's dtype (keeping the (B, L, H, E) layout) and rank.
Tensor finished(const Tensor& t, DType dtype, int64_t rank) {
  Tensor out = t;
  if (t.dtype() != dtype) {
    out = empty_heads_last(t.size(0), t.size(1), t.size(2), t.size(3), dtype, t.device());
    copy_(out, t);
  }
  return rank == 3 ? select(out, 0, 0) : out;
}

double scale_for(const Tensor& q, std::optional<double> scale) {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(q.size(-1), 1)));
}

}  // namespace

AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                             std::optional<double> scale) {
  check_operands(q, k, v);
  const DType compute = compute_dtype(q.dtype());
  Tensor q4 = prepared(q, compute), k4 = prepared(k, compute), v4 = prepared(v, compute);
  Tensor out = empty_heads_last(q4.size(0), q4.size(1), q4.size(2), v4.size(3), compute, q.device());
  Tensor lse = empty({q4.size(0), q4.size(1), q4.size(2)}, {.dtype = compute, .device = q.device()});
  if (lse.numel() > 0) kernels::attention_forward(q.device(), out, lse, q4, k4, v4, is_causal, scale_for(q, scale));
  return {finished(out, q.dtype(), q.dim()), q.dim() == 3 ? select(lse, 0, 0) : lse};
}

AttentionGrads scaled_dot_product_attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                                     const Tensor& v, const AttentionResult& forward, bool is_causal,
                                                     std::optional<double> scale) {
  check_operands(q, k, v);
  const DType compute = compute_dtype(q.dtype());
  Tensor q4 = prepared(q, compute), k4 = prepared(k, compute), v4 = prepared(v, compute);
  Tensor out4 = prepared(forward.out, compute), grad4 = prepared(grad_out, compute);
  Tensor lse = contiguous(forward.lse.dim() == 2 ? unsqueeze(forward.lse, 0) : forward.lse);
  const Device device = q.device();
  auto [grad_q, grad_k, grad_v] = empty_qkv_grads(q4, k4, v4);
  if (lse.numel() > 0) {
    kernels::attention_backward(device, grad_q, grad_k, grad_v, grad4, q4, k4, v4, out4, lse, is_causal,
                                scale_for(q, scale));
  } else {  // no queries: the keys and values get no gradient
    fill_(grad_k, 0);
    fill_(grad_v, 0);
  }
  return {finished(grad_q, q.dtype(), q.dim()), finished(grad_k, k.dtype(), k.dim()),
          finished(grad_v, v.dtype(), v.dim())};
}

}  // namespace raw
}  // namespace syncgrad
