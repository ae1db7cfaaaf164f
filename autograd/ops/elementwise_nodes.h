// Backward nodes of the elementwise ops (shared by the out-of-place and in-place forms). Each returns one
// gradient per input edge, summed back over broadcast dims (raw::sum_to) and converted to the input's dtype;
// gradients are computed only for edges that need them. Input slots: binary ops (a, b), clamp with tensor
// bounds (x, min, max), where (a, b); a number operand has no edge.
#pragma once

#include <optional>

#include "autograd/meta.h"
#include "autograd/node.h"
#include "tensor/ops/unary.h"

namespace syncgrad::autograd::elementwise {

// Shape and dtype of an op input, for mapping its gradient back.
struct InputInfo {
  Shape shape;
  DType dtype = DType::f32;
  InputInfo() = default;
  explicit InputInfo(const Tensor& t)
      : shape(t.defined() ? t.sizes() : Shape{}), dtype(t.defined() ? t.dtype() : DType::f32) {}
};

// a + alpha * b (sub is alpha = -1).
struct AddBackward final : NodeOf<AddBackward> {
  static constexpr const char* kName = "AddBackward";
  Scalar alpha = 1;
  InputInfo a, b;
  GradList apply(GradList&& g) override;
};

struct MulBackward final : NodeOf<MulBackward> {
  static constexpr const char* kName = "MulBackward";
  SavedTensor a, b;  // a: only when b needs a gradient, and the reverse
  InputInfo a_info, b_info;
  GradList apply(GradList&& g) override;
  void release_saved() override;
};

struct DivBackward final : NodeOf<DivBackward> {
  static constexpr const char* kName = "DivBackward";
  SavedTensor a, b;  // a: only when b needs a gradient
  InputInfo a_info, b_info;
  GradList apply(GradList&& g) override;
  void release_saved() override;
};

struct PowBackward final : NodeOf<PowBackward> {
  static constexpr const char* kName = "PowBackward";
  SavedTensor base, exponent, result;
  InputInfo a_info, b_info;
  GradList apply(GradList&& g) override;
  void release_saved() override;
};

// maximum/minimum: the larger (smaller) input gets the gradient; ties split it evenly.
struct MaximumBackward final : NodeOf<MaximumBackward> {
  static constexpr const char* kName = "MaximumBackward";
  SavedTensor a, b;
  InputInfo a_info, b_info;
  GradList apply(GradList&& g) override;
  void release_saved() override;
};

struct MinimumBackward final : NodeOf<MinimumBackward> {
  static constexpr const char* kName = "MinimumBackward";
  SavedTensor a, b;
  InputInfo a_info, b_info;
  GradList apply(GradList&& g) override;
  void release_saved() override;
};

// clamp with number bounds: the gradient passes where min <= x <= max (bounds included, as PyTorch).
struct ClampBackward final : NodeOf<ClampBackward> {
  static constexpr const char* kName = "ClampBackward";
  SavedTensor x;
  std::optional<Scalar> low, high;
  GradList apply(GradList&& g) override;
  void release_saved() override;
};

// clamp with tensor bounds (either may be undefined): x as ClampBackward; a bound gets the gradient where
// it is the value taken (x beyond it, and for min only while min < max).
struct ClampTensorBackward final : NodeOf<ClampTensorBackward> {
  static constexpr const char* kName = "ClampTensorBackward";
  SavedTensor x, low, high;
  InputInfo x_info, low_info, high_info;
  GradList apply(GradList&& g) override;
  void release_saved() override;
};

struct WhereBackward final : NodeOf<WhereBackward> {
  static constexpr const char* kName = "WhereBackward";
  SavedTensor cond;
  InputInfo a_info, b_info;
  GradList apply(GradList&& g) override;
  void release_saved() override;
};

constexpr const char* unary_node_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: return "NegBackward";
    case UnaryOp::abs: return "AbsBackward";
    case UnaryOp::relu: return "ReluBackward";
    case UnaryOp::square: return "SquareBackward";
    case UnaryOp::sign: return "SignBackward";
    case UnaryOp::exp: return "ExpBackward";
    case UnaryOp::log: return "LogBackward";
    case UnaryOp::log1p: return "Log1pBackward";
    case UnaryOp::sqrt: return "SqrtBackward";
    case UnaryOp::rsqrt: return "RsqrtBackward";
    case UnaryOp::sigmoid: return "SigmoidBackward";
    case UnaryOp::tanh: return "TanhBackward";
    case UnaryOp::gelu: return "GeluBackward";
    case UnaryOp::gelu_tanh: return "GeluTanhBackward";
  }
  return "UnaryBackward";
}

// Backward of a unary op: `saved` is its result or input (see unary_backward_uses_result), undefined for
// neg and sign, whose derivative needs neither.
template <UnaryOp Op>
struct UnaryBackward final : NodeOf<UnaryBackward<Op>> {
  static constexpr const char* kName = unary_node_name(Op);
  SavedTensor saved;
  GradList apply(GradList&& g) override {
    if (!g[0].defined()) return {};
    return {raw::unary_backward(Op, g[0], saved.defined() ? saved.get(*this) : g[0])};
  }
  void release_saved() override { saved.reset(); }
};

}  // namespace syncgrad::autograd::elementwise
