// CPU binary arithmetic kernels over strided, broadcast operands; contiguous runs take a vectorisable loop.
#include "tensor/cpu/loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/elementwise.h"

namespace syncgrad::cpu {
namespace {

template <class T, class F>
void map2(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  for_each_strided<3>(out.sizes(),
                      {static_cast<char*>(out.data_ptr()), static_cast<char*>(a.data_ptr()),
                       static_cast<char*>(b.data_ptr())},
                      {&out, &a, &b}, [&f](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
                        constexpr int64_t e = sizeof(T);
                        T* o = reinterpret_cast<T*>(p[0]);
                        const T* x = reinterpret_cast<const T*>(p[1]);
                        const T* y = reinterpret_cast<const T*>(p[2]);
                        if (s[0] == e && s[1] == e && s[2] == e) {
                          for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
                        } else if (s[0] == e && s[1] == e && s[2] == 0) {
                          const T yv = *y;
                          for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
                        } else if (s[0] == e && s[1] == 0 && s[2] == e) {
                          const T xv = *x;
                          for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
                        } else {
                          for (int64_t i = 0; i < n; ++i) {
                            *reinterpret_cast<T*>(p[0] + i * s[0]) = f(*reinterpret_cast<const T*>(p[1] + i * s[1]),
                                                                       *reinterpret_cast<const T*>(p[2] + i * s[2]));
                          }
                        }
                      });
}

void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_all(out.dtype(), "binary", [&]<class T>() {
    using M = opmath_t<T>;
    auto cast = [](M v) { return static_cast<T>(v); };
    switch (op) {
      case BinaryOp::add:
        if constexpr (std::is_same_v<T, bool>) map2<T>(out, a, b, [](T x, T y) { return x || y; });
        else map2<T>(out, a, b, [cast](T x, T y) { return cast(M(x) + M(y)); });
        break;
      case BinaryOp::sub:
        map2<T>(out, a, b, [cast](T x, T y) { return cast(M(x) - M(y)); });
        break;
      case BinaryOp::mul:
        if constexpr (std::is_same_v<T, bool>) map2<T>(out, a, b, [](T x, T y) { return x && y; });
        else map2<T>(out, a, b, [cast](T x, T y) { return cast(M(x) * M(y)); });
        break;
      case BinaryOp::div:
        map2<T>(out, a, b, [cast](T x, T y) { return cast(M(x) / M(y)); });
        break;
    }
  });
}

void add_scaled_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  visit_numeric(out.dtype(), "add", [&]<class T>() {
    using M = opmath_t<T>;
    M s = std::is_integral_v<M> ? static_cast<M>(alpha.to_int()) : static_cast<M>(alpha.to_double());
    map2<T>(out, a, b, [s](T x, T y) { return static_cast<T>(M(x) + s * M(y)); });
  });
}

const KernelRegistrar reg_binary(kernels::binary, DeviceType::kCPU, &binary_kernel);
const KernelRegistrar reg_add_scaled(kernels::add_scaled, DeviceType::kCPU, &add_scaled_kernel);

}  // namespace
}  // namespace syncgrad::cpu
