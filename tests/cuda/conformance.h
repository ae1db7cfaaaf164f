// Helpers of the CUDA conformance suite (tests/cuda/): random inputs made on the CPU, the same values placed
// on either device in a chosen memory layout, and comparisons of a CUDA result (or gradient) with the CPU's
// at the precision of its dtype.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "syncgrad.h"

namespace syncgrad::cudatest {

inline const Device kCuda0(DeviceType::kCUDA, 0);

// How a test input is laid out in memory (same logical shape and values on both devices).
enum class Layout {
  contiguous,
  transposed,  // last two dims stored swapped (a transposed view); as contiguous below 2 dims
  strided,     // every other element of a buffer twice as wide in the last dim
};
inline const Layout kAllLayouts[] = {Layout::contiguous, Layout::transposed, Layout::strided};
const char* layout_name(Layout layout);

// Values drawn on the CPU from `seed`: normal for floating dtypes (times `scale`), integers in [-5, 5)
// (bool: 0/1, u8: [0, 10)).
Tensor random_values(const Shape& shape, DType dtype, uint64_t seed, double scale = 1.0);

// `values` (a CPU tensor) copied to `device` in `layout`.
Tensor place(const Tensor& values, Device device, Layout layout = Layout::contiguous);

// Tolerances of a comparison: |gpu - cpu| <= abs + rel * |cpu|.
struct Tolerance {
  double rel = 0;
  double abs = 0;
};
// f32: 1e-5 relative; f64: 1e-10; f16 / bf16: a few units of their last place; integers and bool: exact.
Tolerance tolerance_for(DType dtype);

// "" when `gpu` (any device) matches `cpu` in shape, dtype and values within `tol` (NaN matches NaN); else a
// description of the first difference.
std::string mismatch(const Tensor& gpu, const Tensor& cpu, Tolerance tol);
inline std::string mismatch(const Tensor& gpu, const Tensor& cpu) {
  return mismatch(gpu, cpu, tolerance_for(cpu.dtype()));
}

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs `op` on `inputs` (CPU values) on the CPU and, with the inputs placed in `layout`, on CUDA; checks the
// results match. Returns the CUDA result.
Tensor check_op(const std::string& what, const std::vector<Tensor>& inputs, const Op& op, Layout layout, Tolerance tol);
inline Tensor check_op(const std::string& what, const std::vector<Tensor>& inputs, const Op& op,
                       Layout layout = Layout::contiguous) {
  return check_op(what, inputs, op, layout, tolerance_for(inputs.at(0).dtype()));
}

// Runs `op` forward and backward (the loss is the sum of the output times fixed random weights) on both
// devices and checks the outputs and the gradients of the floating inputs match. `differentiable[i]` says
// whether input i requires a gradient (all floating inputs when empty).
void check_grad(const std::string& what, const std::vector<Tensor>& inputs, const Op& op, Tolerance tol,
                std::vector<bool> differentiable = {});

}  // namespace syncgrad::cudatest

// CHECK that `message` is empty, printing it otherwise.
#define CHECK_EMPTY(message)                         \
  do {                                               \
    const std::string sg_message_ = (message);       \
    CHECK_MESSAGE(sg_message_.empty(), sg_message_); \
  } while (0)
