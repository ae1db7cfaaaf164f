// Reduction kernels used by the Gloo process group, one per (dtype, op); f16 and bf16 go through float.
#include "distributed/gloo_reduce.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::distributed {
namespace {

struct Sum {
  template <class T> static T apply(T a, T b) { return a + b; }
};
struct Max {
  template <class T> static T apply(T a, T b) { return (a != a || a > b) ? a : b; }  // NaN wins
};
struct Min {
  template <class T> static T apply(T a, T b) { return (a != a || a < b) ? a : b; }
};

// Storage type -> the type arithmetic happens in.
template <class T> struct Compute { using type = T; };
template <> struct Compute<Eigen::half> { using type = float; };
template <> struct Compute<Eigen::bfloat16> { using type = float; };

template <class T, class Op>
void reduce(void* out, const void* a, const void* b, size_t n) {
  using C = typename Compute<T>::type;
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(Op::apply(static_cast<C>(x[i]), static_cast<C>(y[i])));
}

template <class T>
ReduceKernel pick(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return &reduce<T, Sum>;
    case ReduceOp::kMax: return &reduce<T, Max>;
    case ReduceOp::kMin: return &reduce<T, Min>;
  }
  return nullptr;
}

template <class T>
void divide(void* data, size_t n, double divisor) {
  using C = typename Compute<T>::type;
  auto* d = static_cast<T*>(data);
  const C by = static_cast<C>(divisor);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(static_cast<C>(d[i]) / by);
}

// x = op(x, y) on gloo element type T holding values of storage type S.
template <class T, class S, class Op>
void in_place(T* x, const T* y, size_t n) {
  reduce<S, Op>(x, x, y, n);
}

template <class T, class S>
const gloo::ReductionFunction<T>* pick_legacy(ReduceOp op) {
  static const gloo::ReductionFunction<T> sum(gloo::SUM, &in_place<T, S, Sum>);
  static const gloo::ReductionFunction<T> max(gloo::MAX, &in_place<T, S, Max>);
  static const gloo::ReductionFunction<T> min(gloo::MIN, &in_place<T, S, Min>);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return &sum;
    case ReduceOp::kMax: return &max;
    case ReduceOp::kMin: return &min;
  }
  return nullptr;
}

}  // namespace

template <class T>
const gloo::ReductionFunction<T>* legacy_reduction(DType dtype, ReduceOp op) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return dtype == DType::f16 ? pick_legacy<uint16_t, Eigen::half>(op) : pick_legacy<uint16_t, Eigen::bfloat16>(op);
  } else {
    return pick_legacy<T, T>(op);
  }
}

template const gloo::ReductionFunction<float>* legacy_reduction<float>(DType, ReduceOp);
template const gloo::ReductionFunction<double>* legacy_reduction<double>(DType, ReduceOp);
template const gloo::ReductionFunction<int64_t>* legacy_reduction<int64_t>(DType, ReduceOp);
template const gloo::ReductionFunction<int32_t>* legacy_reduction<int32_t>(DType, ReduceOp);
template const gloo::ReductionFunction<uint8_t>* legacy_reduction<uint8_t>(DType, ReduceOp);
template const gloo::ReductionFunction<uint16_t>* legacy_reduction<uint16_t>(DType, ReduceOp);

ReduceKernel reduce_kernel(DType dtype, ReduceOp op, const char* collective) {
  SYNCGRAD_CHECK(op != ReduceOp::kAvg || is_floating(dtype), DTypeError, collective,
                 ": ReduceOp avg needs a floating dtype, got ", dtype_name(dtype),
                 "; reduce with sum and divide, or convert the tensor to f32 first");
  switch (dtype) {
    case DType::f32: return pick<float>(op);
    case DType::f64: return pick<double>(op);
    case DType::f16: return pick<Eigen::half>(op);
    case DType::bf16: return pick<Eigen::bfloat16>(op);
    case DType::i64: return pick<int64_t>(op);
    case DType::i32: return pick<int32_t>(op);
    case DType::u8: return pick<uint8_t>(op);
    case DType::boolean: break;
  }
  throw DTypeError(std::string(collective) + ": cannot reduce a " + dtype_name(dtype) +
                   " tensor; convert it to u8 or i32 first");
}

void divide_in_place(void* data, DType dtype, size_t n, double divisor) {
  switch (dtype) {
    case DType::f32: return divide<float>(data, n, divisor);
    case DType::f64: return divide<double>(data, n, divisor);
    case DType::f16: return divide<Eigen::half>(data, n, divisor);
    case DType::bf16: return divide<Eigen::bfloat16>(data, n, divisor);
    default: throw DTypeError(std::string("divide_in_place: not a floating dtype: ") + dtype_name(dtype));
  }
}

}  // namespace syncgrad::distributed
