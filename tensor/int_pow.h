// Integer power for the pow kernels of integer dtypes, shared by the CPU kernel (tensor/cpu/elementwise_binary.cpp)
// and the CUDA kernel (tensor/cuda/binary.cu) so that both give the same results.
#pragma once

#include <type_traits>

#include "tensor/host_device.h"

namespace syncgrad {

// base ** exponent by squaring; negative exponents give the truncated result (0 unless |base| == 1).
template <class M>
SYNCGRAD_HOST_DEVICE M int_pow(M base, M exponent) {
  if constexpr (std::is_signed_v<M>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exponent % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  M result = 1;
  while (exponent != 0) {
    if (exponent & 1) result = static_cast<M>(result * base);
    base = static_cast<M>(base * base);
    exponent = static_cast<M>(exponent / 2);
  }
  return result;
}

}  // namespace syncgrad
