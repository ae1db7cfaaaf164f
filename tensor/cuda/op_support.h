// Helpers shared by the host glue of the CUDA kernels (tensor/cuda/*_ops.cpp): running a launch on the
// tensor's device and compute stream with the op named in errors, dtype checks worded like the CPU kernels',
// scalars as kernels take them, elementwise launches over strided operands, and small device -> host reads.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/cuda/context.h"
#include "tensor/cuda/elementwise_kernels.h"
#include "tensor/cuda/layout.h"
#include "tensor/errors.h"
#include "tensor/scalar.h"
#include "tensor/tensor.h"

namespace syncgrad::cuda {

// Runs body(stream) with the device current; CUDA errors get "<op> on cuda:N: " in front.
template <class Body>
void on_device(const char* op, Device device, Body&& body) {
  try {
    DeviceGuard guard(device.index);
    body(compute_stream(device.index));
  } catch (const DeviceError& e) {
    throw DeviceError(std::string(op) + " on " + device.str() + ": " + e.what());
  }
}

inline char* bytes(const Tensor& t) { return static_cast<char*>(t.data_ptr()); }

inline ScalarArg scalar_arg(const Scalar& s) { return {s.to_double(), s.to_int()}; }

// DTypeError "<op>: dtype X is not supported (supported: <allowed>)", as the CPU kernels word it.
[[noreturn]] void unsupported_dtype(const char* op, DType dtype, const char* allowed);
// Each raises unsupported_dtype unless the dtype is in the named set.
void require_floating(const char* op, DType dtype);
void require_numeric(const char* op, DType dtype);
void require_index(const char* op, DType dtype);

// Runs launch(pointers, geometry, stream) over the pieces of the common shape of `operands` (operand 0 is the
// output; the others already expanded to its shape), in the order of tensor/cuda/layout.h.
template <int K, class Launch>
void for_each_piece(const char* op, const std::array<const Tensor*, K>& operands, Launch&& launch) {
  const Tensor& out = *operands[0];
  if (out.numel() == 0) return;
  on_device(op, out.device(), [&](cudaStream_t stream) {
    std::array<char*, K> bases;
    for (int k = 0; k < K; ++k) bases[k] = bytes(*operands[k]);
    for_each_geometry<K>(out.sizes(), bases, operands, LayoutMode::kOrdered,
                         [&](const std::array<char*, K>& ptrs, const Geometry<K>& g) { launch(ptrs, g, stream); });
  });
}

// The geometry of K operands of one shape after merging dims (layout.h's order) when it fits one launch;
// false when more than kMaxDims dims remain (or the shape is empty).
template <int K>
bool single_geometry(const Shape& shape, const std::array<const Tensor*, K>& operands, Geometry<K>& out) {
  int pieces = 0;
  std::array<char*, K> bases{};
  for_each_geometry<K>(shape, bases, operands, LayoutMode::kOrdered,
                       [&](const std::array<char*, K>&, const Geometry<K>& g) {
                         if (++pieces == 1) out = g;
                       });
  return pieces == 1;
}

// The values of a small int64 device tensor, on the host (waits for the device's queued work).
std::vector<int64_t> read_int64(const Tensor& t);

// An int64 tensor on `device` holding `values` (the small result slots kernels write into).
Tensor device_int64(Device device, const std::vector<int64_t>& values);

}  // namespace syncgrad::cuda
