// Differentiable matrix products. For C = A @ B the gradients are GEMMs on transposed views (never
// materialised): dA = dC @ B^T, dB = A^T @ dC. Broadcast batch dimensions are summed back to the operand's
// shape; a bias gradient is dC summed over the rows. Each operand is saved only when the other one needs a
// gradient, and a gradient is computed only for inputs that need one.
#include "autograd/ops/linalg.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/views.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::Node;
using autograd::SavedTensor;

// The last two dimensions swapped (a view).
Tensor mT(const Tensor& t) { return raw::transpose(t, -2, -1); }

// (..., K) as a (rows, K) matrix (a view when the strides allow); a 1-D tensor is one row.
Tensor as_rows(const Tensor& t) { return t.dim() == 1 ? raw::unsqueeze(t, 0) : raw::flatten(t, 0, -2); }

Tensor scaled(const Tensor& t, const Scalar& factor) {
  return factor.to_double() == 1.0 ? t : raw::mul(t, factor);
}

// A two-operand product's operands, each saved only if the other one needs a gradient.
struct Operands {
  SavedTensor a, b;
  Operands(const Tensor& a_value, const Tensor& b_value)
      : a(autograd::needs_grad(b_value) ? a_value : Tensor()), b(autograd::needs_grad(a_value) ? b_value : Tensor()) {}
};

// matmul in its general form: 1-D operands are treated as (1, K) rows / (K, 1) columns, batch dimensions
// broadcast; when the second operand is a matrix, the first one's batch is folded into the rows.
GradList matmul_backward(const Node& node, const Tensor& g, const Operands& saved, const Shape& a_shape,
                         const Shape& b_shape) {
  const bool a_vector = a_shape.size() == 1, b_vector = b_shape.size() == 1;
  // The output gradient with the dimensions matmul removed put back: (batch..., M, N).
  Tensor grad = g;
  if (b_vector) grad = raw::unsqueeze(grad, grad.dim());
  if (a_vector) grad = raw::unsqueeze(grad, grad.dim() - 1);
  GradList grads(2);
  if (node.needs_input_grad(0)) {
    Tensor bm = saved.b.get(node);
    if (b_vector) bm = raw::unsqueeze(bm, 1);
    Shape a_matrix_shape = a_vector ? Shape{1, a_shape[0]} : a_shape;
    grads[0] = raw::reshape(raw::sum_to(raw::matmul(grad, mT(bm)), a_matrix_shape), a_shape);
  }
  if (node.needs_input_grad(1)) {
    Tensor am = saved.a.get(node);
    if (a_vector) am = raw::unsqueeze(am, 0);
    if (b_shape.size() <= 2) {
      // (K, rows) @ (rows, N) over the folded batch: one GEMM.
      Tensor rows = as_rows(am);
      Tensor grad_rows = as_rows(grad);
      grads[1] = raw::reshape(raw::mm(mT(rows), grad_rows), b_shape);
    } else {
      grads[1] = raw::sum_to(raw::matmul(mT(am), grad), b_shape);
    }
  }
  return grads;
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&a, &b})) return mm(c[0], c[1]);
  Tensor out = raw::mm(a, b);
  if (autograd::any_requires_grad({&a, &b})) {
    auto backward = [saved = Operands(a, b)](const Node& node, GradList&& g) {  // (M, K), (K, N)
      GradList grads(2);
      if (node.needs_input_grad(0)) grads[0] = raw::mm(g[0], mT(saved.b.get(node)));
      if (node.needs_input_grad(1)) grads[1] = raw::mm(mT(saved.a.get(node)), g[0]);
      return grads;
    };
    autograd::record<"MmBackward">({&a, &b}, {&out}, std::move(backward));
  }
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&a, &b})) return bmm(c[0], c[1]);
  Tensor out = raw::bmm(a, b);
  if (autograd::any_requires_grad({&a, &b})) {
    auto backward = [saved = Operands(a, b)](const Node& node, GradList&& g) {  // (B, M, K), (B, K, N)
      GradList grads(2);
      if (node.needs_input_grad(0)) grads[0] = raw::bmm(g[0], mT(saved.b.get(node)));
      if (node.needs_input_grad(1)) grads[1] = raw::bmm(mT(saved.a.get(node)), g[0]);
      return grads;
    };
    autograd::record<"BmmBackward">({&a, &b}, {&out}, std::move(backward));
  }
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&a, &b})) return matmul(c[0], c[1]);
  Tensor out = raw::matmul(a, b);
  if (autograd::any_requires_grad({&a, &b})) {
    auto backward = [saved = Operands(a, b), a_shape = a.sizes(), b_shape = b.sizes()](const Node& node,
                                                                                      GradList&& g) {
      return matmul_backward(node, g[0], saved, a_shape, b_shape);
    };
    autograd::record<"MatmulBackward">({&a, &b}, {&out}, std::move(backward));
  }
  return out;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&bias, &a, &b})) {
    return addmm(c[0], c[1], c[2], beta, alpha);
  }
  Tensor out = raw::addmm(bias, a, b, beta, alpha);
  if (autograd::any_requires_grad({&bias, &a, &b})) {
    auto backward = [saved = Operands(a, b), bias_shape = bias.sizes(), beta, alpha](const Node& node,
                                                                                    GradList&& g) {
      GradList grads(3);
      if (node.needs_input_grad(0)) grads[0] = raw::sum_to(scaled(g[0], beta), bias_shape);
      if (node.needs_input_grad(1)) grads[1] = scaled(raw::mm(g[0], mT(saved.b.get(node))), alpha);
      if (node.needs_input_grad(2)) grads[2] = scaled(raw::mm(mT(saved.a.get(node)), g[0]), alpha);
      return grads;
    };
    autograd::record<"AddmmBackward">({&bias, &a, &b}, {&out}, std::move(backward));
  }
  return out;
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&input, &weight, &bias})) {
    return linear(c[0], c[1], c[2]);
  }
  Tensor out = raw::linear(input, weight, bias);
  const bool has_bias = bias.defined();
  if (has_bias ? autograd::any_requires_grad({&input, &weight, &bias}) : autograd::any_requires_grad({&input, &weight})) {
    // input (*, in), weight (out, in); each saved only if the other needs a gradient.
    auto backward = [saved = Operands(input, weight), input_shape = input.sizes(),
                     bias_shape = has_bias ? bias.sizes() : Shape{}](const Node& node, GradList&& g) {
      Tensor grad_rows = as_rows(g[0]);  // (N, out)
      GradList grads(node.next_edges.size());
      if (node.needs_input_grad(0)) grads[0] = raw::reshape(raw::mm(grad_rows, saved.b.get(node)), input_shape);
      if (node.needs_input_grad(1)) grads[1] = raw::mm(mT(grad_rows), as_rows(saved.a.get(node)));  // (N, in)
      if (node.needs_input_grad(2)) grads[2] = raw::sum_to(raw::sum(grad_rows, {0}), bias_shape);
      return grads;
    };
    if (has_bias) {
      autograd::record<"LinearBackward">({&input, &weight, &bias}, {&out}, std::move(backward));
    } else {
      autograd::record<"LinearBackward">({&input, &weight}, {&out}, std::move(backward));
    }
  }
  return out;
}

}  // namespace syncgrad
