// Raw matrix-product front-ends: argument checks, PyTorch's matmul shape rules, output allocation and the
// call of the batched GEMM kernel. Transposed operands are passed as views; the kernels read them in place.
#include "tensor/ops/linalg.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&)> gemm("matmul");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&)> gemm_bias("addmm");
}  // namespace kernels

namespace raw {
namespace {

std::string product_str(const Tensor& a, const Tensor& b) { return shape_str(a.sizes()) + " @ " + shape_str(b.sizes()); }

// Same device, same dtype, and a dtype that has arithmetic.
void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  check_same_device(op, a, b);
  SYNCGRAD_CHECK(a.dtype() == b.dtype(), DTypeError, op, ": ", product_str(a, b), ": dtypes ", dtype_name(a.dtype()),
                 " and ", dtype_name(b.dtype()), " differ; convert one operand with .to(dtype)");
  SYNCGRAD_CHECK(a.dtype() != DType::boolean, DTypeError, op,
                 ": dtype bool is not supported; convert the operands with .to(dtype)");
}

void check_inner(const char* op, const Tensor& a, const Tensor& b, int64_t k_a, int64_t k_b) {
  SYNCGRAD_CHECK(
      k_a == k_b, ShapeError, op, ": ", product_str(a, b), ": inner dimensions ", k_a, " and ", k_b,
      " differ; the first operand's last dimension must equal the second's second-to-last (transpose an operand?)");
}

// Integer products take integer scale factors only (as in PyTorch).
void check_scale(const char* op, DType dtype, const Scalar& value, const char* name) {
  SYNCGRAD_CHECK(is_floating(dtype) || !value.is_floating(), ValueError, op, ": ", name, " = ",
                 std::to_string(value.to_double()), " is a floating point number but the operands are ",
                 dtype_name(dtype), "; pass an integer");
}

// Whether `shape` broadcasts to `target` without growing it.
bool broadcasts_to(const Shape& shape, const Shape& target) {
  if (shape.size() > target.size()) return false;
  const size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != 1 && shape[i] != target[lead + i]) return false;
  }
  return true;
}

// out = beta * out + alpha * (a @ b) with a (..., M, K), b (..., K, N) expanded to out's batch.
void run_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  if (out.numel() == 0) return;
  if (a.size(-1) == 0) {  // an empty sum: the product part is zero
    if (beta.to_double() == 0.0) fill_(out, 0);
    else if (beta.to_double() != 1.0) mul_(out, beta);
    return;
  }
  kernels::gemm(out.device(), out, a, b, alpha, beta);
}

// (..., K) as a (rows, K) matrix (a view when the strides allow); a 1-D tensor is one row.
Tensor as_rows(const Tensor& t) { return t.dim() == 1 ? unsqueeze(t, 0) : flatten(t, 0, -2); }

Tensor product_2d(const Tensor& a, const Tensor& b) {
  Tensor out = empty({a.size(0), b.size(1)}, {.dtype = a.dtype(), .device = a.device()});
  run_gemm(out, a, b, 1, 0);
  return out;
}

// a (..., M, K) @ b (..., K, N), both at least 2-D, batch dimensions broadcast -> (batch..., M, N).
Tensor batched_product(const Tensor& a, const Tensor& b, const Tensor& a_orig, const Tensor& b_orig) {
  Shape batch_a(a.sizes().begin(), a.sizes().end() - 2);
  Shape batch_b(b.sizes().begin(), b.sizes().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(batch_a, batch_b, "matmul");
  } catch (const ShapeError&) {
    throw ShapeError("matmul: " + product_str(a_orig, b_orig) + ": batch dimensions " + shape_str(batch_a) +
                     " and " + shape_str(batch_b) + " cannot be broadcast; sizes must match or be 1");
  }
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  Shape a_shape = batch, b_shape = batch, out_shape = batch;
  a_shape.insert(a_shape.end(), {m, k});
  b_shape.insert(b_shape.end(), {k, n});
  out_shape.insert(out_shape.end(), {m, n});
  Tensor out = empty(out_shape, {.dtype = a.dtype(), .device = a.device()});
  run_gemm(out, a.sizes() == a_shape ? a : expand(a, a_shape), b.sizes() == b_shape ? b : expand(b, b_shape), 1, 0);
  return out;
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  check_operands("mm", a, b);
  SYNCGRAD_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "mm: ", product_str(a, b),
                 ": expects two 2-D tensors; use matmul for 1-D or batched operands");
  check_inner("mm", a, b, a.size(1), b.size(0));
  return product_2d(a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_operands("bmm", a, b);
  SYNCGRAD_CHECK(a.dim() == 3 && b.dim() == 3, ShapeError, "bmm: ", product_str(a, b),
                 ": expects two 3-D tensors (batch, rows, cols); use matmul for other ranks");
  SYNCGRAD_CHECK(a.size(0) == b.size(0), ShapeError, "bmm: ", product_str(a, b), ": batch sizes ", a.size(0), " and ",
                 b.size(0), " differ; bmm does not broadcast (matmul does)");
  check_inner("bmm", a, b, a.size(2), b.size(1));
  Tensor out = empty({a.size(0), a.size(1), b.size(2)}, {.dtype = a.dtype(), .device = a.device()});
  run_gemm(out, a, b, 1, 0);
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands("matmul", a, b);
  SYNCGRAD_CHECK(a.dim() != 0 && b.dim() != 0, ShapeError, "matmul: ", product_str(a, b),
                 ": both operands need at least one dimension; use mul for scalars");
  // A 1-D first operand is a row (1, K); a 1-D second operand a column (K, 1).
  Tensor a2 = a.dim() == 1 ? unsqueeze(a, 0) : a;
  Tensor b2 = b.dim() == 1 ? unsqueeze(b, 1) : b;
  check_inner("matmul", a, b, a2.size(-1), b2.size(-2));
  Tensor out;
  if (b2.dim() == 2) {
    // The batch of a folds into the rows of one GEMM: (..., M, K) -> (batch * M, K).
    Shape out_shape(a2.sizes().begin(), a2.sizes().end() - 1);
    out_shape.push_back(b2.size(1));
    out = view(product_2d(as_rows(a2), b2), out_shape);
  } else {
    out = batched_product(a2, b2, a, b);
  }
  if (b.dim() == 1) out = squeeze(out, -1);
  if (a.dim() == 1) out = squeeze(out, b.dim() == 1 ? -1 : -2);
  return out;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
  check_operands("addmm", a, b);
  check_operands("addmm", bias, a);
  SYNCGRAD_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "addmm: ", product_str(a, b), ": expects two 2-D matrices");
  check_inner("addmm", a, b, a.size(1), b.size(0));
  check_scale("addmm", a.dtype(), alpha, "alpha");
  check_scale("addmm", a.dtype(), beta, "beta");
  Shape out_shape{a.size(0), b.size(1)};
  SYNCGRAD_CHECK(broadcasts_to(bias.sizes(), out_shape), ShapeError, "addmm: bias of shape ", shape_str(bias.sizes()),
                 " does not broadcast to the product's shape ", shape_str(out_shape), " (", product_str(a, b), ")");
  Tensor out = empty(out_shape, {.dtype = a.dtype(), .device = a.device()});
  // A linear layer's form (one bias per column, both scales 1) in one pass where the device has the fused kernel.
  const bool row_bias = bias.dim() == 1 && bias.size(0) == out_shape[1] && bias.is_contiguous() &&
                        bias.dtype() == a.dtype() && alpha.to_double() == 1.0 && beta.to_double() == 1.0;
  if (row_bias && out.numel() > 0 && a.size(1) > 0 && kernels::gemm_bias.has(a.device().type)) {
    kernels::gemm_bias(a.device(), out, a, b, bias);
    return out;
  }
  if (beta.to_double() != 0.0) copy_(out, bias);
  run_gemm(out, a, b, alpha, beta);
  return out;
}

void check_linear(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias) {
  check_operands(op, input, weight);
  SYNCGRAD_CHECK(weight.dim() == 2, ShapeError, op, ": weight of shape ", shape_str(weight.sizes()),
                 " must be 2-D (out_features, in_features)");
  SYNCGRAD_CHECK(input.dim() != 0 && input.size(-1) == weight.size(1), ShapeError, op, ": input of shape ",
                 shape_str(input.sizes()), " does not end in in_features = ", weight.size(1), " of weight ",
                 shape_str(weight.sizes()), " (out_features, in_features); expected input (*, ", weight.size(1), ")");
  if (bias.defined()) {
    check_operands(op, bias, weight);
    SYNCGRAD_CHECK(bias.dim() <= 1 && (bias.numel() == weight.size(0) || bias.numel() == 1), ShapeError, op,
                   ": bias of shape ", shape_str(bias.sizes()), " must be (out_features) = [", weight.size(0),
                   "] for weight ", shape_str(weight.sizes()));
  }
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  check_linear("linear", input, weight, bias);
  const int64_t out_features = weight.size(0);
  Tensor rows = as_rows(input);               // (N, in)
  Tensor weight_t = transpose(weight, 0, 1);  // (in, out), a view read in place
  Tensor out = bias.defined() ? addmm(bias, rows, weight_t) : product_2d(rows, weight_t);
  Shape out_shape(input.sizes().begin(), input.sizes().end() - 1);
  out_shape.push_back(out_features);
  return view(out, out_shape);
}

}  // namespace raw
}  // namespace syncgrad
