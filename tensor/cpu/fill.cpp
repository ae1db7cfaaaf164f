// CPU fill kernel: every element of a (possibly strided) tensor set to one value, split over the intra-op
// threads when large.
#include <algorithm>

#include "tensor/cpu/loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/copy.h"

namespace syncgrad::cpu {
namespace {

void fill_kernel(const Tensor& out, const Scalar& value) {
  visit_all(out.dtype(), "fill_", [&]<class T>() {
    T v;
    if constexpr (std::is_same_v<T, bool>) {
      v = value.to_double() != 0.0;
    } else if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>(value.to_int());
    } else {
      v = static_cast<T>(value.is_floating() ? value.to_double() : static_cast<double>(value.to_int()));
    }
    auto fill_run = [v](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
      if (s[0] == sizeof(T)) {
        std::fill_n(reinterpret_cast<T*>(p[0]), n, v);
        return;
      }
      char* o = p[0];
      for (int64_t i = 0; i < n; ++i, o += s[0]) *reinterpret_cast<T*>(o) = v;
    };
    for_each_strided_parallel<1>(out.sizes(), {static_cast<char*>(out.data_ptr())}, {&out}, fill_run);
  });
}

const KernelRegistrar registered(kernels::fill, DeviceType::kCPU, &fill_kernel);

}  // namespace
}  // namespace syncgrad::cpu
