// Raw softmax / log_softmax front-ends: dtype rules, dim wrapping, output allocation and dispatch.
#include "tensor/ops/softmax.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, int64_t, bool)> softmax("softmax");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, int64_t, bool)> softmax_backward(
    "softmax backward");
}  // namespace kernels

namespace raw {
namespace {

Tensor softmax_impl(const Tensor& t, int64_t dim, std::optional<DType> dtype, bool log, const char* op) {
  Tensor in = dtype ? to(t, *dtype) : t;
  SYNCGRAD_CHECK(is_floating(in.dtype()), DTypeError, op, ": needs a floating input, got ", dtype_name(in.dtype()),
                 "; convert first or pass dtype (e.g. DType::f32)");
  int64_t d = wrap_dim(dim, in.dim(), op);
  Tensor src = in.dim() == 0 ? reshape(in, {1}) : contiguous(in);
  Tensor out = empty(src.sizes(), {.dtype = src.dtype(), .device = src.device()});
  if (out.numel() > 0) kernels::softmax(src.device(), out, src, d, log);
  return in.dim() == 0 ? view(out, {}) : out;
}

}  // namespace

Tensor softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl(t, dim, dtype, false, "softmax");
}

Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl(t, dim, dtype, true, "log_softmax");
}

Tensor softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, bool log) {
  int64_t d = wrap_dim(dim, out.dim(), "softmax backward");
  Shape shape = out.dim() == 0 ? Shape{1} : out.sizes();
  Tensor y = reshape(contiguous(out), shape);
  Tensor g = reshape(contiguous(to(grad_out, out.dtype())), shape);
  Tensor grad_in = empty(shape, {.dtype = out.dtype(), .device = out.device()});
  if (grad_in.numel() > 0) kernels::softmax_backward(out.device(), grad_in, g, y, d, log);
  return view(grad_in, out.sizes());
}

}  // namespace raw
}  // namespace syncgrad
