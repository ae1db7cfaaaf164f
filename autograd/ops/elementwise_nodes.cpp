// Backward formulas of the elementwise ops, written with raw ops only (no graph recording).
#include "autograd/ops/elementwise_nodes.h"

#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/reduce.h"

namespace syncgrad::autograd::elementwise {
namespace {

// The gradient of an input: summed over the dims it was broadcast along, in the input's dtype.
Tensor to_input(const Tensor& grad, const InputInfo& input) {
  return raw::to(raw::sum_to(grad, input.shape), input.dtype);
}

bool needs(const Node& node, size_t slot) { return slot < node.next_edges.size() && node.next_edges[slot].valid(); }

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
  if (needs(node, 0)) {
    Tensor wins = raw::compare(is_max ? CompareOp::gt : CompareOp::lt, a, b);
    out[0] = to_input(raw::where(wins, g, shared), a_info);
  }
  if (needs(node, 1)) {
    Tensor wins = raw::compare(is_max ? CompareOp::lt : CompareOp::gt, a, b);
    out[1] = to_input(raw::where(wins, g, shared), b_info);
  }
  return out;
}

}  // namespace

GradList AddBackward::apply(GradList&& g) {
  if (!g[0].defined()) return {};
  GradList out(2);
  if (needs(*this, 0)) out[0] = to_input(g[0], a);
  if (needs(*this, 1)) {
    bool unit = !alpha.is_floating() && alpha.to_int() == 1;
    out[1] = to_input(unit ? g[0] : raw::mul(g[0], alpha), b);
  }
  return out;
}

GradList MulBackward::apply(GradList&& g) {
  if (!g[0].defined()) return {};
  GradList out(2);
  if (needs(*this, 0)) out[0] = to_input(raw::mul(g[0], b.get(*this)), a_info);
  if (needs(*this, 1)) out[1] = to_input(raw::mul(g[0], a.get(*this)), b_info);
  return out;
}

void MulBackward::release_saved() {
  a.reset();
  b.reset();
}

GradList DivBackward::apply(GradList&& g) {
  if (!g[0].defined()) return {};
  GradList out(2);
  // d(a/b)/da = 1/b; d(a/b)/db = -a/b^2.
  Tensor divisor = b.get(*this);
  Tensor scaled = raw::div(g[0], divisor);
  if (needs(*this, 0)) out[0] = to_input(scaled, a_info);
  if (needs(*this, 1)) out[1] = to_input(raw::neg(raw::div(raw::mul(scaled, a.get(*this)), divisor)), b_info);
  return out;
}

void DivBackward::release_saved() {
  a.reset();
  b.reset();
}

GradList PowBackward::apply(GradList&& g) {
  if (!g[0].defined()) return {};
  GradList out(2);
  Tensor x = base.get(*this), e = exponent.get(*this);
  if (needs(*this, 0)) {
    // e * x^(e-1), taken as 0 where e == 0 (so 0^0 does not give NaN).
    Tensor d = raw::mul(e, raw::pow(x, raw::sub(e, Scalar(1))));
    d = raw::where(raw::compare(CompareOp::eq, e, Scalar(0)), raw::wrap_scalar(0, d), d);
    out[0] = to_input(raw::mul(g[0], d), a_info);
  }
  if (needs(*this, 1)) {
    // x^e * log(x), taken as 0 where x == 0 and e >= 0 (the limit PyTorch uses).
    Tensor d = raw::mul(result.get(*this), raw::log(x));
    Tensor at_zero = raw::compare(CompareOp::logical_and, raw::compare(CompareOp::eq, x, Scalar(0)),
                                  raw::compare(CompareOp::ge, e, Scalar(0)));
    d = raw::where(at_zero, raw::wrap_scalar(0, d), d);
    out[1] = to_input(raw::mul(g[0], d), b_info);
  }
  return out;
}

void PowBackward::release_saved() {
  base.reset();
  exponent.reset();
  result.reset();
}

GradList MaximumBackward::apply(GradList&& g) {
  if (!g[0].defined()) return {};
  return extremum_backward(*this, g[0], a.get(*this), b.get(*this), a_info, b_info, true);
}

void MaximumBackward::release_saved() {
  a.reset();
  b.reset();
}

GradList MinimumBackward::apply(GradList&& g) {
  if (!g[0].defined()) return {};
  return extremum_backward(*this, g[0], a.get(*this), b.get(*this), a_info, b_info, false);
}

void MinimumBackward::release_saved() {
  a.reset();
  b.reset();
}

GradList ClampBackward::apply(GradList&& g) {
  if (!g[0].defined()) return {};
  Tensor input = x.get(*this);
  Tensor inside;
  if (low) inside = raw::compare(CompareOp::ge, input, *low);
  if (high) {
    Tensor below = raw::compare(CompareOp::le, input, *high);
    inside = inside.defined() ? raw::compare(CompareOp::logical_and, inside, below) : below;
  }
  return {masked(inside, g[0])};
}

void ClampBackward::release_saved() { x.reset(); }

GradList ClampTensorBackward::apply(GradList&& g) {
  if (!g[0].defined()) return {};
  GradList out(3);
  Tensor input = x.get(*this);
  Tensor lo = low.defined() ? low.get(*this) : Tensor();
  Tensor hi = high.defined() ? high.get(*this) : Tensor();
  auto both = [](CompareOp op, const Tensor& p, const Tensor& q) { return raw::compare(op, p, q); };
  if (needs(*this, 0)) {
    Tensor inside;
    if (lo.defined()) inside = both(CompareOp::ge, input, lo);
    if (hi.defined()) {
      Tensor below = both(CompareOp::le, input, hi);
      inside = inside.defined() ? both(CompareOp::logical_and, inside, below) : below;
    }
    out[0] = to_input(masked(inside, g[0]), x_info);
  }
  if (needs(*this, 1)) {
    Tensor taken = both(CompareOp::lt, input, lo);
    if (hi.defined()) taken = both(CompareOp::logical_and, taken, both(CompareOp::lt, lo, hi));
    out[1] = to_input(masked(taken, g[0]), low_info);
  }
  if (needs(*this, 2)) {
    Tensor taken = both(CompareOp::gt, input, hi);
    if (lo.defined()) taken = both(CompareOp::logical_or, taken, both(CompareOp::lt, hi, lo));
    out[2] = to_input(masked(taken, g[0]), high_info);
  }
  return out;
}

void ClampTensorBackward::release_saved() {
  x.reset();
  low.reset();
  high.reset();
}

GradList WhereBackward::apply(GradList&& g) {
  if (!g[0].defined()) return {};
  GradList out(2);
  Tensor c = cond.get(*this);
  if (needs(*this, 0)) out[0] = to_input(masked(c, g[0]), a_info);
  if (needs(*this, 1)) out[1] = to_input(masked(raw::logical_not(c), g[0]), b_info);
  return out;
}

void WhereBackward::release_saved() { cond.reset(); }

}  // namespace syncgrad::autograd::elementwise
