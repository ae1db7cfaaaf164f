// Backward formulas of the binary elementwise ops, written with raw ops only (no graph recording).
#include "autograd/ops/elementwise_nodes.h"

#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/unary.h"

namespace syncgrad::autograd::elementwise {
namespace {

// Shape and dtype of an op input, for mapping its gradient back.
struct InputInfo {
  Shape shape;
  DType dtype = DType::f32;
  InputInfo() = default;
  explicit InputInfo(const Tensor* t)
      : shape(t && t->defined() ? t->sizes() : Shape{}), dtype(t && t->defined() ? t->dtype() : DType::f32) {}
};

// The gradient of an input: summed over the dims it was broadcast along, in the input's dtype.
Tensor to_input(const Tensor& grad, const InputInfo& input) {
  return raw::to(raw::sum_to(grad, input.shape), input.dtype);
}

// grad where mask holds, 0 elsewhere (broadcast to the common shape).
Tensor masked(const Tensor& mask, const Tensor& grad) {
  return raw::where(mask, grad, Scalar(0));
}

// Gradients of maximum (is_max) or minimum: the winner takes the gradient, ties share it evenly.
GradList extremum_backward(const Node& node, const Tensor& g, const Tensor& a, const Tensor& b,
                           const InputInfo& a_info, const InputInfo& b_info, bool is_max) {
  GradList out(2);
  Tensor half = raw::mul(g, 0.5);
  Tensor tie = raw::compare(CompareOp::eq, a, b);
  Tensor shared = masked(tie, half);
  if (node.needs_input_grad(0)) {
    Tensor wins = raw::compare(is_max ? CompareOp::gt : CompareOp::lt, a, b);
    out[0] = to_input(raw::where(wins, g, shared), a_info);
  }
  if (node.needs_input_grad(1)) {
    Tensor wins = raw::compare(is_max ? CompareOp::lt : CompareOp::gt, a, b);
    out[1] = to_input(raw::where(wins, g, shared), b_info);
  }
  return out;
}

// Where x lies within the bounds (either may be undefined), as a bool mask.
Tensor inside(const Tensor& x, const Tensor& low, const Tensor& high) {
  Tensor mask;
  if (low.defined()) mask = raw::compare(CompareOp::ge, x, low);
  if (high.defined()) {
    Tensor below = raw::compare(CompareOp::le, x, high);
    mask = mask.defined() ? raw::compare(CompareOp::logical_and, mask, below) : below;
  }
  return mask;
}

}  // namespace

void record_add(const Tensor* a, const Tensor* b, const Scalar& alpha, const Tensor& out) {
  auto backward = [alpha, a_info = InputInfo(a), b_info = InputInfo(b)](const Node& node, GradList&& g) {
    if (!g[0].defined()) return GradList{};
    GradList grads(2);
    if (node.needs_input_grad(0)) grads[0] = to_input(g[0], a_info);
    if (node.needs_input_grad(1)) {
      bool unit = !alpha.is_floating() && alpha.to_int() == 1;
      grads[1] = to_input(unit ? g[0] : raw::mul(g[0], alpha), b_info);
    }
    return grads;
  };
  record<"AddBackward">({a, b}, {&out}, std::move(backward));
}

void record_mul(const Tensor* a, const Tensor* b, SavedTensor a_value, SavedTensor b_value, const Tensor& out) {
  auto backward = [a_value = std::move(a_value), b_value = std::move(b_value), a_info = InputInfo(a),
                   b_info = InputInfo(b)](const Node& node, GradList&& g) {
    if (!g[0].defined()) return GradList{};
    GradList grads(2);
    if (node.needs_input_grad(0)) grads[0] = to_input(raw::mul(g[0], b_value.get(node)), a_info);
    if (node.needs_input_grad(1)) grads[1] = to_input(raw::mul(g[0], a_value.get(node)), b_info);
    return grads;
  };
  record<"MulBackward">({a, b}, {&out}, std::move(backward));
}

void record_div(const Tensor* a, const Tensor* b, SavedTensor a_value, SavedTensor b_value, const Tensor& out) {
  auto backward = [a_value = std::move(a_value), b_value = std::move(b_value), a_info = InputInfo(a),
                   b_info = InputInfo(b)](const Node& node, GradList&& g) {
    if (!g[0].defined()) return GradList{};
    GradList grads(2);
    // d(a/b)/da = 1/b; d(a/b)/db = -a/b^2.
    Tensor divisor = b_value.get(node);
    Tensor scaled = raw::div(g[0], divisor);
    if (node.needs_input_grad(0)) grads[0] = to_input(scaled, a_info);
    if (node.needs_input_grad(1)) {
      grads[1] = to_input(raw::neg(raw::div(raw::mul(scaled, a_value.get(node)), divisor)), b_info);
    }
    return grads;
  };
  record<"DivBackward">({a, b}, {&out}, std::move(backward));
}

void record_pow(const Tensor* base, const Tensor* exponent, SavedTensor base_value, SavedTensor exponent_value,
                SavedTensor result, const Tensor& out) {
  auto backward = [base_value = std::move(base_value), exponent_value = std::move(exponent_value),
                   result = std::move(result), a_info = InputInfo(base),
                   b_info = InputInfo(exponent)](const Node& node, GradList&& g) {
    if (!g[0].defined()) return GradList{};
    GradList grads(2);
    Tensor x = base_value.get(node), e = exponent_value.get(node);
    if (node.needs_input_grad(0)) {
      // e * x^(e-1), taken as 0 where e == 0 (so 0^0 does not give NaN).
      Tensor d = raw::mul(e, raw::pow(x, raw::sub(e, Scalar(1))));
      d = raw::where(raw::compare(CompareOp::eq, e, Scalar(0)), raw::wrap_scalar(0, d), d);
      grads[0] = to_input(raw::mul(g[0], d), a_info);
    }
    if (node.needs_input_grad(1)) {
      // x^e * log(x), taken as 0 where x == 0 and e >= 0 (the limit PyTorch uses).
      Tensor d = raw::mul(result.get(node), raw::log(x));
      Tensor at_zero = raw::compare(CompareOp::logical_and, raw::compare(CompareOp::eq, x, Scalar(0)),
                                    raw::compare(CompareOp::ge, e, Scalar(0)));
      d = raw::where(at_zero, raw::wrap_scalar(0, d), d);
      grads[1] = to_input(raw::mul(g[0], d), b_info);
    }
    return grads;
  };
  record<"PowBackward">({base, exponent}, {&out}, std::move(backward));
}

void record_maximum(const Tensor& a, const Tensor& b, const Tensor& out) {
  auto backward = [a_value = SavedTensor(a), b_value = SavedTensor(b), a_info = InputInfo(&a),
                   b_info = InputInfo(&b)](const Node& node, GradList&& g) {
    if (!g[0].defined()) return GradList{};
    return extremum_backward(node, g[0], a_value.get(node), b_value.get(node), a_info, b_info, true);
  };
  record<"MaximumBackward">({&a, &b}, {&out}, std::move(backward));
}

void record_minimum(const Tensor& a, const Tensor& b, const Tensor& out) {
  auto backward = [a_value = SavedTensor(a), b_value = SavedTensor(b), a_info = InputInfo(&a),
                   b_info = InputInfo(&b)](const Node& node, GradList&& g) {
    if (!g[0].defined()) return GradList{};
    return extremum_backward(node, g[0], a_value.get(node), b_value.get(node), a_info, b_info, false);
  };
  record<"MinimumBackward">({&a, &b}, {&out}, std::move(backward));
}

void record_clamp(const Tensor& x, SavedTensor x_value, const std::optional<Scalar>& low,
                  const std::optional<Scalar>& high, const Tensor& out) {
  auto backward = [x_value = std::move(x_value), low, high](const Node& node, GradList&& g) {
    if (!g[0].defined()) return GradList{};
    Tensor input = x_value.get(node);
    Tensor mask;
    if (low) mask = raw::compare(CompareOp::ge, input, *low);
    if (high) {
      Tensor below = raw::compare(CompareOp::le, input, *high);
      mask = mask.defined() ? raw::compare(CompareOp::logical_and, mask, below) : below;
    }
    return GradList{masked(mask, g[0])};
  };
  record<"ClampBackward">({&x}, {&out}, std::move(backward));
}

void record_clamp(const Tensor& x, const Tensor& low, const Tensor& high, const Tensor& out) {
  auto backward = [x_value = SavedTensor(x), low_value = SavedTensor(low), high_value = SavedTensor(high),
                   x_info = InputInfo(&x), low_info = InputInfo(&low),
                   high_info = InputInfo(&high)](const Node& node, GradList&& g) {
    if (!g[0].defined()) return GradList{};
    GradList grads(3);
    Tensor input = x_value.get(node);
    Tensor lo = low_value.defined() ? low_value.get(node) : Tensor();
    Tensor hi = high_value.defined() ? high_value.get(node) : Tensor();
    if (node.needs_input_grad(0)) grads[0] = to_input(masked(inside(input, lo, hi), g[0]), x_info);
    if (node.needs_input_grad(1)) {
      Tensor taken = raw::compare(CompareOp::lt, input, lo);
      if (hi.defined()) taken = raw::compare(CompareOp::logical_and, taken, raw::compare(CompareOp::lt, lo, hi));
      grads[1] = to_input(masked(taken, g[0]), low_info);
    }
    if (node.needs_input_grad(2)) {
      Tensor taken = raw::compare(CompareOp::gt, input, hi);
      if (lo.defined()) taken = raw::compare(CompareOp::logical_or, taken, raw::compare(CompareOp::lt, hi, lo));
      grads[2] = to_input(masked(taken, g[0]), high_info);
    }
    return grads;
  };
  record<"ClampTensorBackward">({&x, &low, &high}, {&out}, std::move(backward));
}

void record_where(const Tensor& cond, const Tensor& a, const Tensor* b, const Tensor& out) {
  auto backward = [cond_value = SavedTensor(cond), a_info = InputInfo(&a), b_info = InputInfo(b)](const Node& node,
                                                                                                  GradList&& g) {
    if (!g[0].defined()) return GradList{};
    GradList grads(2);
    Tensor c = cond_value.get(node);
    if (node.needs_input_grad(0)) grads[0] = to_input(masked(c, g[0]), a_info);
    if (node.needs_input_grad(1)) grads[1] = to_input(masked(raw::logical_not(c), g[0]), b_info);
    return grads;
  };
  record<"WhereBackward">({&a, b}, {&out}, std::move(backward));
}

}  // namespace syncgrad::autograd::elementwise
