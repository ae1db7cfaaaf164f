// Automatic mixed precision: a thread-local, nestable scope in which the matrix products (mm, bmm, matmul,
// addmm, linear, conv2d) run in float16 or bfloat16, and the precision-sensitive ops (softmax, log_softmax,
// the losses, layer norm, exp, log, sum, mean) run in float32; every other op keeps its inputs' dtype. Batch
// norm runs in float32 on CUDA; on the CPU it normalises a half input in its dtype (float32 arithmetic and
// parameters; autograd/ops/norm.cpp).
// Parameters stay float32 (master weights): inside the outermost scope each float32 leaf that requires grad
// is cast once and the cast reused (made again if the parameter changed in place). The casts are the
// differentiable to(dtype), so gradients reach the float32 parameters, in float32.
//   {
//     auto amp = syncgrad::autocast(DeviceType::kCPU, DType::bf16);
//     loss = cross_entropy(model.forward(x), y);  // GEMMs and convolutions in bf16, the loss in f32
//   }
//   loss.backward();
// Ops consult the policy through autograd::autocast_operands (one call at the top of each listed op).
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace syncgrad {

// Enables (or, with enabled = false, disables) autocast for ops on `device` until the guard is destroyed,
// then restores the previous setting. dtype must be float16 or bfloat16 (ValueError otherwise).
class AutocastGuard {
 public:
  AutocastGuard(DeviceType device, DType dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_;
  bool previous_enabled_;
  DType previous_dtype_;
};

// The scope as a value: `auto amp = autocast(DeviceType::kCPU, DType::bf16);`
[[nodiscard]] inline AutocastGuard autocast(DeviceType device, DType dtype, bool enabled = true) {
  return AutocastGuard(device, dtype, enabled);
}

bool is_autocast_enabled(DeviceType device);
// The lower-precision dtype of `device`'s autocast (bfloat16 on the CPU and float16 on CUDA unless a scope
// says otherwise).
DType autocast_dtype(DeviceType device);
// Parameter casts cached on this thread (emptied when the outermost scope ends).
size_t autocast_cache_size();

namespace autograd {

// How an op in the autocast lists treats its floating operands.
enum class CastPolicy {
  lower_precision,  // float32/float16/bfloat16 operands -> the scope's dtype
  fp32,             // float16/bfloat16 operands -> float32
};

// Operands after the policy's casts. `cast` tells whether any operand changed: the op then calls itself
// again with the cast operands (which need no further cast):
//   if (auto c = autograd::autocast_operands(CastPolicy::lower_precision, {&a, &b})) return mm(c[0], c[1]);
struct AutocastOperands {
  std::array<Tensor, 4> tensors;
  bool cast = false;
  explicit operator bool() const { return cast; }
  const Tensor& operator[](size_t i) const { return tensors[i]; }
};

// Applies `policy` when autocast is enabled for the device of the first defined operand (at most 4
// operands). Undefined, non-floating and float64 operands pass through; with a float64 operand present under
// lower_precision nothing is cast (the op runs in float64 as written).
AutocastOperands autocast_operands(CastPolicy policy, std::initializer_list<const Tensor*> operands);

}  // namespace autograd
}  // namespace syncgrad
