// Host glue of the CUDA elementwise kernels (binary.cu, compare.cu, unary.cu): dtype checks worded like the
// CPU kernels', the strided pieces of the iteration space, and registration into kernels::binary, add_scaled,
// compare, where, clamp, unary and unary_backward.
#include <optional>

#include "tensor/cuda/elementwise_kernels.h"
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/unary.h"

namespace syncgrad::cuda {
namespace {

static_assert(static_cast<int>(BinaryKind::minimum) == static_cast<int>(BinaryOp::minimum));
static_assert(static_cast<int>(CompareKind::logical_xor) == static_cast<int>(CompareOp::logical_xor));
static_assert(static_cast<int>(UnaryKind::exp) == static_cast<int>(UnaryOp::exp));
static_assert(static_cast<int>(UnaryKind::gelu_tanh) == static_cast<int>(UnaryOp::gelu_tanh));

BinaryKind kind_of(BinaryOp op) { return static_cast<BinaryKind>(op); }
CompareKind kind_of(CompareOp op) { return static_cast<CompareKind>(op); }
UnaryKind kind_of(UnaryOp op) { return static_cast<UnaryKind>(op); }

void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  for_each_piece<3>(binary_op_name(op), {&out, &a, &b},
                    [&](const std::array<char*, 3>& p, const Geometry<3>& g, cudaStream_t s) {
                      launch_binary(kind_of(op), out.dtype(), p[0], p[1], p[2], g, s);
                    });
}

void add_scaled_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  require_numeric("add", out.dtype());
  const ScalarArg scale = scalar_arg(alpha);
  for_each_piece<3>("add", {&out, &a, &b}, [&](const std::array<char*, 3>& p, const Geometry<3>& g, cudaStream_t s) {
    launch_add_scaled(out.dtype(), p[0], p[1], p[2], scale, g, s);
  });
}

void compare_kernel(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  for_each_piece<3>(compare_op_name(op), {&out, &a, &b},
                    [&](const std::array<char*, 3>& p, const Geometry<3>& g, cudaStream_t s) {
                      launch_compare(kind_of(op), a.dtype(), p[0], p[1], p[2], g, s);
                    });
}

void where_kernel(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  for_each_piece<4>("where", {&out, &cond, &a, &b},
                    [&](const std::array<char*, 4>& p, const Geometry<4>& g, cudaStream_t s) {
                      launch_where(out.dtype(), p[0], p[1], p[2], p[3], g, s);
                    });
}

void clamp_kernel(const Tensor& out, const Tensor& in, const std::optional<Scalar>& low,
                  const std::optional<Scalar>& high) {
  require_numeric("clamp", out.dtype());
  const std::optional<ScalarArg> lo = low ? std::optional(scalar_arg(*low)) : std::nullopt;
  const std::optional<ScalarArg> hi = high ? std::optional(scalar_arg(*high)) : std::nullopt;
  for_each_piece<2>("clamp", {&out, &in}, [&](const std::array<char*, 2>& p, const Geometry<2>& g, cudaStream_t s) {
    launch_clamp(out.dtype(), p[0], p[1], lo ? &*lo : nullptr, hi ? &*hi : nullptr, g, s);
  });
}

void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in) {
  const char* name = unary_op_name(op);
  require_numeric(name, out.dtype());
  if (unary_is_floating_only(op)) require_floating(name, out.dtype());
  for_each_piece<2>(name, {&out, &in}, [&](const std::array<char*, 2>& p, const Geometry<2>& g, cudaStream_t s) {
    launch_unary(kind_of(op), out.dtype(), p[0], p[1], g, s);
  });
}

void unary_backward_kernel(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& saved) {
  const char* name = unary_op_name(op);
  require_floating(name, grad_in.dtype());
  for_each_piece<3>(name, {&grad_in, &grad_out, &saved},
                    [&](const std::array<char*, 3>& p, const Geometry<3>& g, cudaStream_t s) {
                      launch_unary_backward(kind_of(op), grad_in.dtype(), p[0], p[1], p[2], g, s);
                    });
}

}  // namespace

void register_elementwise_kernels() {
  kernels::binary.set(DeviceType::kCUDA, &binary_kernel);
  kernels::add_scaled.set(DeviceType::kCUDA, &add_scaled_kernel);
  kernels::compare.set(DeviceType::kCUDA, &compare_kernel);
  kernels::where.set(DeviceType::kCUDA, &where_kernel);
  kernels::clamp.set(DeviceType::kCUDA, &clamp_kernel);
  kernels::unary.set(DeviceType::kCUDA, &unary_kernel);
  kernels::unary_backward.set(DeviceType::kCUDA, &unary_backward_kernel);
}

}  // namespace syncgrad::cuda
