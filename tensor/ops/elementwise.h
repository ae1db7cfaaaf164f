// Raw (non-differentiable) binary and ternary elementwise ops with NumPy broadcasting and PyTorch type
// promotion: arithmetic, pow, maximum/minimum, comparisons, logical connectives, where, clamp, and their
// in-place forms. Unary ops are in tensor/ops/unary.h; the differentiable API in autograd/ops/elementwise.h.
#pragma once

#include <optional>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

// Arithmetic whose result has the operands' (common) dtype.
enum class BinaryOp : uint8_t { add, sub, mul, div, pow, maximum, minimum };
// Comparisons and logical connectives: bool results.
enum class CompareOp : uint8_t { eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_xor };

namespace kernels {
// out = a (op) b, all three of out's shape and dtype (a, b already expanded and converted).
extern KernelSlot<void(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b)> binary;
// out = a + alpha * b (same conventions as binary).
extern KernelSlot<void(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha)> add_scaled;
// out (bool) = a (op) b; a and b of out's shape and one common dtype.
extern KernelSlot<void(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b)> compare;
// out = cond ? a : b; cond bool, a and b of out's dtype, all of out's shape.
extern KernelSlot<void(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b)> where;
// out = min(max(in, low), high) with absent bounds skipped; in of out's shape and dtype; NaN stays NaN.
extern KernelSlot<void(const Tensor& out, const Tensor& in, const std::optional<Scalar>& low,
                       const std::optional<Scalar>& high)>
    clamp;
}  // namespace kernels

// Result dtype of an op on two tensors (0-dim tensors do not raise the category's width, as in PyTorch).
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);
// The op's name as error messages and kernels spell it ("add", "maximum", "lt", ...).
const char* binary_op_name(BinaryOp op);
const char* compare_op_name(CompareOp op);
// Raises DTypeError naming `op` and both dtypes unless a `from` result may be stored in a `to` tensor
// (no float -> integer, no number -> bool: PyTorch's can_cast).
void check_castable(DType from, DType to, const char* op);

namespace raw {
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name);
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give floating results
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);  // NaN wins
Tensor minimum(const Tensor& a, const Tensor& b);
// Tensor (op) number and number (op) tensor: the number takes part in promotion as PyTorch's Python scalars.
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Scalar& b);
Tensor sub(const Scalar& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor div(const Scalar& a, const Tensor& b);
Tensor pow(const Tensor& a, const Scalar& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
// A 0-dim tensor holding `value` with the dtype `value` promotes to against `like` (on like's device).
Tensor wrap_scalar(const Scalar& value, const Tensor& like);

// Bool results.
Tensor compare(CompareOp op, const Tensor& a, const Tensor& b);
Tensor compare(CompareOp op, const Tensor& a, const Scalar& b);
Tensor logical_not(const Tensor& a);

// cond ? a : b with cond, a, b broadcast together; cond must be bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
// Elements below `low` become low, above `high` become high (at least one bound); high wins if low > high.
Tensor clamp(const Tensor& t, const std::optional<Scalar>& low, const std::optional<Scalar>& high);
Tensor clamp(const Tensor& t, const Tensor& low, const Tensor& high);  // either bound may be undefined

// In place: self = self (op) other with other broadcast to self's shape, computed in the promoted dtype and
// stored in self's dtype (which must be castable from it); bumps self's version.
void binary_(BinaryOp op, const Tensor& self, const Tensor& other, const char* name);
void add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
void sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
void mul_(const Tensor& self, const Tensor& other);
void div_(const Tensor& self, const Tensor& other);
void add_(const Tensor& self, const Scalar& value);
void sub_(const Tensor& self, const Scalar& value);
void mul_(const Tensor& self, const Scalar& value);
void div_(const Tensor& self, const Scalar& value);
void clamp_(const Tensor& self, const std::optional<Scalar>& low, const std::optional<Scalar>& high);
}  // namespace raw

}  // namespace syncgrad
