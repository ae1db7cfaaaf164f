// CPU copy kernel: strided copy with dtype conversion (dst and src have the same shape), split over the
// intra-op threads when large.
#include <cstring>

#include "tensor/cpu/loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/copy.h"

namespace syncgrad::cpu {
namespace {

template <class To, class From>
void copy_typed(const Tensor& dst, const Tensor& src) {
  auto copy_run = [](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
    if constexpr (std::is_same_v<To, From>) {
      if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
        std::memcpy(p[0], p[1], n * sizeof(To));
        return;
      }
    }
    if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
      To* out = reinterpret_cast<To*>(p[0]);
      const From* in = reinterpret_cast<const From*>(p[1]);
      for (int64_t i = 0; i < n; ++i) out[i] = convert<To>(in[i]);
      return;
    }
    char* o = p[0];
    const char* in = p[1];
    for (int64_t i = 0; i < n; ++i, o += s[0], in += s[1]) {
      *reinterpret_cast<To*>(o) = convert<To>(*reinterpret_cast<const From*>(in));
    }
  };
  for_each_strided_parallel<2>(dst.sizes(), {static_cast<char*>(dst.data_ptr()), static_cast<char*>(src.data_ptr())},
                               {&dst, &src}, copy_run);
}

void copy_kernel(const Tensor& dst, const Tensor& src) {
  visit_all(dst.dtype(), "copy_", [&]<class To>() {
    visit_all(src.dtype(), "copy_", [&]<class From>() { copy_typed<To, From>(dst, src); });
  });
}

const KernelRegistrar registered(kernels::copy, DeviceType::kCPU, &copy_kernel);

}  // namespace
}  // namespace syncgrad::cpu
