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
using autograd::NodeOf;
using autograd::SavedTensor;

// The last two dimensions swapped (a view).
Tensor mT(const Tensor& t) { return raw::transpose(t, -2, -1); }

// (..., K) as a (rows, K) matrix (a view when the strides allow); a 1-D tensor is one row.
Tensor as_rows(const Tensor& t) { return t.dim() == 1 ? raw::unsqueeze(t, 0) : raw::flatten(t, 0, -2); }

bool needs_grad_of(const autograd::Node& node, size_t input) { return node.next_edges[input].valid(); }

Tensor scaled(const Tensor& t, const Scalar& factor) {
  return factor.to_double() == 1.0 ? t : raw::mul(t, factor);
}

struct MmBackward final : NodeOf<MmBackward> {
  static constexpr const char* kName = "MmBackward";
  SavedTensor a, b;  // (M, K), (K, N)
  GradList apply(GradList&& g) override {
    GradList grads(2);
    if (needs_grad_of(*this, 0)) grads[0] = raw::mm(g[0], mT(b.get(*this)));
    if (needs_grad_of(*this, 1)) grads[1] = raw::mm(mT(a.get(*this)), g[0]);
    return grads;
  }
  void release_saved() override {
    a.reset();
    b.reset();
  }
};

struct BmmBackward final : NodeOf<BmmBackward> {
  static constexpr const char* kName = "BmmBackward";
  SavedTensor a, b;  // (B, M, K), (B, K, N)
  GradList apply(GradList&& g) override {
    GradList grads(2);
    if (needs_grad_of(*this, 0)) grads[0] = raw::bmm(g[0], mT(b.get(*this)));
    if (needs_grad_of(*this, 1)) grads[1] = raw::bmm(mT(a.get(*this)), g[0]);
    return grads;
  }
  void release_saved() override {
    a.reset();
    b.reset();
  }
};

// matmul in its general form: 1-D operands are treated as (1, K) rows / (K, 1) columns, batch dimensions
// broadcast; when the second operand is a matrix, the first one's batch is folded into the rows.
struct MatmulBackward final : NodeOf<MatmulBackward> {
  static constexpr const char* kName = "MatmulBackward";
  SavedTensor a, b;
  Shape a_shape, b_shape;
  GradList apply(GradList&& g) override {
    const bool a_vector = a_shape.size() == 1, b_vector = b_shape.size() == 1;
    // The output gradient with the dimensions matmul removed put back: (batch..., M, N).
    Tensor grad = g[0];
    if (b_vector) grad = raw::unsqueeze(grad, grad.dim());
    if (a_vector) grad = raw::unsqueeze(grad, grad.dim() - 1);
    GradList grads(2);
    if (needs_grad_of(*this, 0)) {
      Tensor bm = b.get(*this);
      if (b_vector) bm = raw::unsqueeze(bm, 1);
      Shape a_matrix_shape = a_vector ? Shape{1, a_shape[0]} : a_shape;
      grads[0] = raw::reshape(raw::sum_to(raw::matmul(grad, mT(bm)), a_matrix_shape), a_shape);
    }
    if (needs_grad_of(*this, 1)) {
      Tensor am = a.get(*this);
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
  void release_saved() override {
    a.reset();
    b.reset();
  }
};

struct AddmmBackward final : NodeOf<AddmmBackward> {
  static constexpr const char* kName = "AddmmBackward";
  SavedTensor a, b;  // (M, K), (K, N)
  Shape bias_shape;
  Scalar beta, alpha;
  GradList apply(GradList&& g) override {
    GradList grads(3);
    if (needs_grad_of(*this, 0)) grads[0] = raw::sum_to(scaled(g[0], beta), bias_shape);
    if (needs_grad_of(*this, 1)) grads[1] = scaled(raw::mm(g[0], mT(b.get(*this))), alpha);
    if (needs_grad_of(*this, 2)) grads[2] = scaled(raw::mm(mT(a.get(*this)), g[0]), alpha);
    return grads;
  }
  void release_saved() override {
    a.reset();
    b.reset();
  }
};

struct LinearBackward final : NodeOf<LinearBackward> {
  static constexpr const char* kName = "LinearBackward";
  SavedTensor input, weight;  // (*, in), (out, in)
  Shape input_shape, bias_shape;
  GradList apply(GradList&& g) override {
    Tensor grad_rows = as_rows(g[0]);  // (N, out)
    GradList grads(next_edges.size());
    if (needs_grad_of(*this, 0)) grads[0] = raw::reshape(raw::mm(grad_rows, weight.get(*this)), input_shape);
    if (needs_grad_of(*this, 1)) {
      Tensor rows = as_rows(input.get(*this));  // (N, in)
      grads[1] = raw::mm(mT(grad_rows), rows);
    }
    if (grads.size() > 2 && needs_grad_of(*this, 2)) grads[2] = raw::sum_to(raw::sum(grad_rows, {0}), bias_shape);
    return grads;
  }
  void release_saved() override {
    input.reset();
    weight.reset();
  }
};

// Records a two-operand product node, saving each operand only if the other one needs a gradient.
template <class NodeT>
std::shared_ptr<NodeT> product_node(const Tensor& a, const Tensor& b) {
  auto node = std::make_shared<NodeT>();
  if (autograd::needs_grad(b)) node->a = a;
  if (autograd::needs_grad(a)) node->b = b;
  return node;
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&a, &b})) return mm(c[0], c[1]);
  Tensor out = raw::mm(a, b);
  if (autograd::any_requires_grad({&a, &b})) autograd::record(product_node<MmBackward>(a, b), {&a, &b}, {&out});
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&a, &b})) return bmm(c[0], c[1]);
  Tensor out = raw::bmm(a, b);
  if (autograd::any_requires_grad({&a, &b})) autograd::record(product_node<BmmBackward>(a, b), {&a, &b}, {&out});
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&a, &b})) return matmul(c[0], c[1]);
  Tensor out = raw::matmul(a, b);
  if (autograd::any_requires_grad({&a, &b})) {
    auto node = product_node<MatmulBackward>(a, b);
    node->a_shape = a.sizes();
    node->b_shape = b.sizes();
    autograd::record(node, {&a, &b}, {&out});
  }
  return out;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::lower_precision, {&bias, &a, &b})) {
    return addmm(c[0], c[1], c[2], beta, alpha);
  }
  Tensor out = raw::addmm(bias, a, b, beta, alpha);
  if (autograd::any_requires_grad({&bias, &a, &b})) {
    auto node = product_node<AddmmBackward>(a, b);
    node->bias_shape = bias.sizes();
    node->beta = beta;
    node->alpha = alpha;
    autograd::record(node, {&bias, &a, &b}, {&out});
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
    auto node = std::make_shared<LinearBackward>();
    if (autograd::needs_grad(weight)) node->input = input;
    if (autograd::needs_grad(input)) node->weight = weight;
    node->input_shape = input.sizes();
    if (has_bias) {
      node->bias_shape = bias.sizes();
      autograd::record(node, {&input, &weight, &bias}, {&out});
    } else {
      autograd::record(node, {&input, &weight}, {&out});
    }
  }
  return out;
}

}  // namespace syncgrad
