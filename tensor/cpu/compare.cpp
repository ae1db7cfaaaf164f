// CPU kernels with a bool side: comparisons and logical connectives (bool results), and where (bool
// condition selecting between two operands).
#include "tensor/cpu/elementwise_loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/elementwise.h"

namespace syncgrad::cpu {
namespace {

template <class T, class F>
void predicate(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  using M = opmath_t<T>;
  map2<bool, T, T>(out, a, b, [f](T x, T y) { return f(static_cast<M>(x), static_cast<M>(y)); });
}

template <class T>
void compare_typed(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using M = opmath_t<T>;
  switch (op) {
    case CompareOp::eq: predicate<T>(out, a, b, [](M x, M y) { return x == y; }); return;
    case CompareOp::ne: predicate<T>(out, a, b, [](M x, M y) { return x != y; }); return;
    case CompareOp::lt: predicate<T>(out, a, b, [](M x, M y) { return x < y; }); return;
    case CompareOp::le: predicate<T>(out, a, b, [](M x, M y) { return x <= y; }); return;
    case CompareOp::gt: predicate<T>(out, a, b, [](M x, M y) { return x > y; }); return;
    case CompareOp::ge: predicate<T>(out, a, b, [](M x, M y) { return x >= y; }); return;
    case CompareOp::logical_and: predicate<T>(out, a, b, [](M x, M y) { return x != M(0) && y != M(0); }); return;
    case CompareOp::logical_or: predicate<T>(out, a, b, [](M x, M y) { return x != M(0) || y != M(0); }); return;
    case CompareOp::logical_xor: predicate<T>(out, a, b, [](M x, M y) { return (x != M(0)) != (y != M(0)); }); return;
  }
}

void compare_kernel(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_all(a.dtype(), compare_op_name(op), [&]<class T>() { compare_typed<T>(op, out, a, b); });
}

void where_kernel(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  visit_all(out.dtype(), "where", [&]<class T>() {
    map3<T, bool, T, T>(out, cond, a, b, [](bool c, T x, T y) { return c ? x : y; });
  });
}

const KernelRegistrar reg_compare(kernels::compare, DeviceType::kCPU, &compare_kernel);
const KernelRegistrar reg_where(kernels::where, DeviceType::kCPU, &where_kernel);

}  // namespace
}  // namespace syncgrad::cpu
