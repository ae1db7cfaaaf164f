// Tensor factories: uninitialised, constant, ranges, random, and construction from host data. They create
// leaves (requires_grad as asked) in namespace syncgrad.
#pragma once

#include <initializer_list>
#include <vector>

#include "tensor/dispatch.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// Element i of contiguous `out` gets Philox(seed, first_counter + i): identical on every device.
extern KernelSlot<void(const Tensor& out, double low, double high, uint64_t seed, uint64_t first_counter)> uniform;
extern KernelSlot<void(const Tensor& out, double mean, double stddev, uint64_t seed, uint64_t first_counter)> normal;
// Integers uniform in [low, high).
extern KernelSlot<void(const Tensor& out, int64_t low, int64_t high, uint64_t seed, uint64_t first_counter)> randint;
}  // namespace kernels

struct TensorOptions {
  DType dtype = DType::f32;
  Device device = kCPU;
  bool requires_grad = false;
};

Tensor empty(const Shape& shape, const TensorOptions& options = {});
Tensor empty_strided(const Shape& shape, const Shape& strides, const TensorOptions& options = {});
Tensor zeros(const Shape& shape, const TensorOptions& options = {});
Tensor ones(const Shape& shape, const TensorOptions& options = {});
Tensor full(const Shape& shape, const Scalar& value, const TensorOptions& options = {});
// Same shape, dtype and device as `like` (not its strides or requires_grad).
Tensor empty_like(const Tensor& like);
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);
Tensor full_like(const Tensor& like, const Scalar& value);

// [start, end) in steps of `step`; dtype defaults to i64 when all arguments are integers, else f32.
Tensor arange(const Scalar& end);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options);
Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options = {});

// Random factories draw from `gen` (default: the process generator, see manual_seed()).
Tensor rand(const Shape& shape, const TensorOptions& options = {}, Generator* gen = nullptr);   // U[0, 1)
Tensor randn(const Shape& shape, const TensorOptions& options = {}, Generator* gen = nullptr);  // N(0, 1)
// Integers uniform in [low, high); dtype defaults to i64.
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options = {.dtype = DType::i64},
               Generator* gen = nullptr);
// A uniformly random permutation of 0..n-1 (i64), identical on every machine for the same generator state.
Tensor randperm(int64_t n, Generator* gen = nullptr, const TensorOptions& options = {.dtype = DType::i64});

// Copies host values into a new tensor of `shape` (numel must match) converted to options.dtype.
Tensor from_vector(const std::vector<float>& values, const Shape& shape, const TensorOptions& options = {});
Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                   const TensorOptions& options = {.dtype = DType::f64});
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape,
                   const TensorOptions& options = {.dtype = DType::i64});
// 1-D convenience: tensor({1.f, 2.f, 3.f}).
Tensor tensor(std::initializer_list<float> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<double> values, const TensorOptions& options = {.dtype = DType::f64});
Tensor tensor(std::initializer_list<int64_t> values, const TensorOptions& options = {.dtype = DType::i64});
Tensor tensor(std::initializer_list<int> values, const TensorOptions& options = {.dtype = DType::i64});
// A 0-dim tensor holding `value`.
Tensor scalar_tensor(const Scalar& value, const TensorOptions& options = {});
Tensor scalar_tensor(const Scalar& value, DType dtype, Device device);

// Values as a host vector converted to T (any dtype/device/strides).
template <class T> std::vector<T> to_vector(const Tensor& t);

}  // namespace syncgrad
