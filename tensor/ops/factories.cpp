// Tensor factories.
#include "tensor/ops/factories.h"

#include <cmath>

#include "tensor/check.h"
#include "tensor/numel.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, double, double, uint64_t, uint64_t)> uniform("rand");
constinit KernelSlot<void(const Tensor&, double, double, uint64_t, uint64_t)> normal("randn");
constinit KernelSlot<void(const Tensor&, int64_t, int64_t, uint64_t, uint64_t)> randint("randint");
}  // namespace kernels

namespace {

void check_shape(const Shape& shape, const char* op) {
  for (int64_t s : shape) {
    SYNCGRAD_CHECK(s >= 0, ValueError, op, ": negative dimension ", s, " in shape ", shape_str(shape));
  }
}

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad) t.requires_grad_(true);
  return t;
}

Generator& pick(Generator* gen) { return gen != nullptr ? *gen : default_generator(); }

}  // namespace

Tensor empty(const Shape& shape, const TensorOptions& options) {
  check_shape(shape, "empty");
  size_t nbytes = checked_nbytes(shape, element_size(options.dtype), "empty");
  auto storage = std::make_shared<Storage>(nbytes, options.device);
  Tensor t(std::make_shared<TensorImpl>(std::move(storage), options.dtype, shape, contiguous_strides(shape), 0));
  return finish(t, options);
}

Tensor empty_strided(const Shape& shape, const Shape& strides, const TensorOptions& options) {
  check_shape(shape, "empty_strided");
  SYNCGRAD_CHECK(strides.size() == shape.size(), ShapeError, "empty_strided: ", strides.size(), " strides for shape ",
                 shape_str(shape));
  int64_t extent = 1;
  bool overflow = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) extent = 0;
    if (extent == 0) break;
    int64_t span = 0;
    overflow = overflow || __builtin_mul_overflow(shape[i] - 1, strides[i], &span) ||
               __builtin_add_overflow(extent, span, &extent);
  }
  size_t nbytes = 0;
  overflow = overflow || __builtin_mul_overflow(static_cast<size_t>(extent), element_size(options.dtype), &nbytes);
  SYNCGRAD_CHECK(!overflow, ValueError, "empty_strided: shape ", shape_str(shape), " with strides ", shape_str(strides),
                 " spans 2^63 or more elements (or 2^64 or more bytes); check the sizes");
  auto storage = std::make_shared<Storage>(nbytes, options.device);
  return finish(Tensor(std::make_shared<TensorImpl>(std::move(storage), options.dtype, shape, strides, 0)), options);
}

Tensor full(const Shape& shape, const Scalar& value, const TensorOptions& options) {
  TensorOptions plain = options;
  plain.requires_grad = false;
  Tensor t = empty(shape, plain);
  kernels::fill(t.device(), t, value);
  return finish(t, options);
}

Tensor zeros(const Shape& shape, const TensorOptions& options) { return full(shape, 0, options); }
Tensor ones(const Shape& shape, const TensorOptions& options) { return full(shape, 1, options); }

Tensor empty_like(const Tensor& like) { return empty(like.sizes(), {.dtype = like.dtype(), .device = like.device()}); }
Tensor zeros_like(const Tensor& like) { return zeros(like.sizes(), {.dtype = like.dtype(), .device = like.device()}); }
Tensor ones_like(const Tensor& like) { return ones(like.sizes(), {.dtype = like.dtype(), .device = like.device()}); }
Tensor full_like(const Tensor& like, const Scalar& value) {
  return full(like.sizes(), value, {.dtype = like.dtype(), .device = like.device()});
}

Tensor arange(const Scalar& end) { return arange(0, end, 1); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step) {
  bool all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
  return arange(start, end, step, {.dtype = all_int ? DType::i64 : default_float_dtype()});
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options) {
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  SYNCGRAD_CHECK(st != 0 && std::isfinite(s) && std::isfinite(e) && std::isfinite(st), ValueError,
                 "arange: invalid range start=", std::to_string(s), " end=", std::to_string(e),
                 " step=", std::to_string(st), " (step must be non-zero, values finite)");
  SYNCGRAD_CHECK(!(st > 0 && e < s) && !(st < 0 && e > s), ValueError, "arange: step ", std::to_string(st),
                 " moves away from end ", std::to_string(e), " (start ", std::to_string(s), ")");
  int64_t n = static_cast<int64_t>(std::ceil((e - s) / st));
  std::vector<double> values(n);
  bool integral = !start.is_floating() && !step.is_floating();
  for (int64_t i = 0; i < n; ++i) {
    values[i] = integral ? static_cast<double>(start.to_int() + i * step.to_int()) : s + static_cast<double>(i) * st;
  }
  return from_vector(values, {n}, options);
}

Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options) {
  SYNCGRAD_CHECK(steps >= 0, ValueError, "linspace: number of steps must be non-negative, got ", steps);
  std::vector<double> values(steps);
  double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  // Fill from both ends so the last value is exactly `end`.
  for (int64_t i = 0; i < steps; ++i) {
    values[i] = i < steps / 2 ? start + step * static_cast<double>(i) : end - step * static_cast<double>(steps - 1 - i);
  }
  return from_vector(values, {steps}, options);
}

Tensor rand(const Shape& shape, const TensorOptions& options, Generator* gen) {
  TensorOptions plain = options;
  plain.requires_grad = false;
  Tensor t = empty(shape, plain);
  Generator& g = pick(gen);
  kernels::uniform(t.device(), t, 0.0, 1.0, g.seed(), g.reserve(static_cast<uint64_t>(t.numel())));
  return finish(t, options);
}

Tensor randn(const Shape& shape, const TensorOptions& options, Generator* gen) {
  TensorOptions plain = options;
  plain.requires_grad = false;
  Tensor t = empty(shape, plain);
  Generator& g = pick(gen);
  kernels::normal(t.device(), t, 0.0, 1.0, g.seed(), g.reserve(static_cast<uint64_t>(t.numel())));
  return finish(t, options);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options, Generator* gen) {
  SYNCGRAD_CHECK(high > low, ValueError, "randint: empty range [", low, ", ", high, "); high must be greater than low");
  Tensor t = empty(shape, options);
  Generator& g = pick(gen);
  kernels::randint(t.device(), t, low, high, g.seed(), g.reserve(static_cast<uint64_t>(t.numel())));
  return t;
}

Tensor randperm(int64_t n, Generator* gen, const TensorOptions& options) {
  SYNCGRAD_CHECK(n >= 0, ValueError, "randperm: n must be non-negative, got ", n);
  Generator& g = pick(gen);
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  // Fisher-Yates with the generator's own unbiased draws: the same on every machine.
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(g.next_below(static_cast<uint64_t>(i + 1)));
    std::swap(perm[i], perm[j]);
  }
  return from_vector(perm, {n}, options);
}

namespace {

template <class T>
Tensor from_host(const T* values, size_t count, const Shape& shape, const TensorOptions& options) {
  check_shape(shape, "from_vector");
  SYNCGRAD_CHECK(static_cast<int64_t>(count) == shape_numel(shape), ShapeError, "from_vector: ", count,
                 " values do not fill shape ", shape_str(shape), " (", shape_numel(shape), " elements)");
  // Wrap the host values without copying, then convert/copy into the requested dtype and device.
  Tensor src(std::make_shared<TensorImpl>(
      std::make_shared<Storage>(const_cast<T*>(values), count * sizeof(T), kCPU, nullptr), dtype_of<T>(), shape,
      contiguous_strides(shape), 0));
  Tensor out = empty(shape, {.dtype = options.dtype, .device = options.device});
  raw::copy_(out, src);
  return finish(out, options);
}

}  // namespace

Tensor from_vector(const std::vector<float>& values, const Shape& shape, const TensorOptions& options) {
  return from_host(values.data(), values.size(), shape, options);
}
Tensor from_vector(const std::vector<double>& values, const Shape& shape, const TensorOptions& options) {
  return from_host(values.data(), values.size(), shape, options);
}
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, const TensorOptions& options) {
  return from_host(values.data(), values.size(), shape, options);
}
Tensor tensor(std::initializer_list<float> values, const TensorOptions& options) {
  return from_host(values.begin(), values.size(), {static_cast<int64_t>(values.size())}, options);
}
Tensor tensor(std::initializer_list<double> values, const TensorOptions& options) {
  return from_host(values.begin(), values.size(), {static_cast<int64_t>(values.size())}, options);
}
Tensor tensor(std::initializer_list<int64_t> values, const TensorOptions& options) {
  return from_host(values.begin(), values.size(), {static_cast<int64_t>(values.size())}, options);
}

Tensor tensor(std::initializer_list<int> values, const TensorOptions& options) {
  std::vector<int64_t> wide(values.begin(), values.end());
  return from_host(wide.data(), wide.size(), {static_cast<int64_t>(wide.size())}, options);
}

Tensor scalar_tensor(const Scalar& value, const TensorOptions& options) { return full({}, value, options); }
Tensor scalar_tensor(const Scalar& value, DType dtype, Device device) {
  return full({}, value, {.dtype = dtype, .device = device});
}

template <class T> std::vector<T> to_vector(const Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.numel()));
  Tensor dst(std::make_shared<TensorImpl>(std::make_shared<Storage>(out.data(), out.size() * sizeof(T), kCPU, nullptr),
                                          dtype_of<T>(), t.sizes(), contiguous_strides(t.sizes()), 0));
  raw::copy_(dst, t);
  return out;
}
template std::vector<float> to_vector<float>(const Tensor&);
template std::vector<double> to_vector<double>(const Tensor&);
template std::vector<int64_t> to_vector<int64_t>(const Tensor&);
template std::vector<int32_t> to_vector<int32_t>(const Tensor&);
template std::vector<uint8_t> to_vector<uint8_t>(const Tensor&);

}  // namespace syncgrad
