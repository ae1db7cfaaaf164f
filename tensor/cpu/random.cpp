// CPU random kernels: element i of a draw uses Philox(seed, first_counter + i), so the values do not depend
// on thread count or device. Normal values use Box-Muller on two uniform draws of the same block.
#include <cmath>

#include "tensor/cpu/visit.h"
#include "tensor/ops/factories.h"
#include "tensor/philox.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

template <class Draw>
void for_each_element(const Tensor& out, const char* op, Draw draw) {
  visit_floating(out.dtype(), op, [&]<class T>() {
    T* data = static_cast<T*>(out.data_ptr());
    parallel_for(out.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[i] = static_cast<T>(draw(i));
    });
  });
}

void uniform_kernel(const Tensor& out, double low, double high, uint64_t seed, uint64_t first) {
  double span = high - low;
  for_each_element(out, "rand", [=](int64_t i) {
    philox::Block b = philox::draw(seed, first + static_cast<uint64_t>(i));
    return low + span * philox::uniform_double(b.w[0], b.w[1]);
  });
}

void normal_kernel(const Tensor& out, double mean, double stddev, uint64_t seed, uint64_t first) {
  for_each_element(out, "randn", [=](int64_t i) {
    philox::Block b = philox::draw(seed, first + static_cast<uint64_t>(i));
    double u1 = 1.0 - philox::uniform_double(b.w[0], b.w[1]);  // (0, 1]: log is finite
    double u2 = philox::uniform_double(b.w[2], b.w[3]);
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  });
}

void randint_kernel(const Tensor& out, int64_t low, int64_t high, uint64_t seed, uint64_t first) {
  uint64_t range = static_cast<uint64_t>(high - low);
  visit_numeric(out.dtype(), "randint", [&]<class T>() {
    T* data = static_cast<T*>(out.data_ptr());
    for (int64_t i = 0; i < out.numel(); ++i) {
      philox::Block b = philox::draw(seed, first + static_cast<uint64_t>(i));
      uint64_t bits = (static_cast<uint64_t>(b.w[0]) << 32) | b.w[1];
      // 64 random bits reduced modulo a range below 2^63: the bias is below 2^-63 (1e-19).
      data[i] = static_cast<T>(static_cast<double>(low + static_cast<int64_t>(bits % range)));
    }
  });
}

const KernelRegistrar reg_uniform(kernels::uniform, DeviceType::kCPU, &uniform_kernel);
const KernelRegistrar reg_normal(kernels::normal, DeviceType::kCPU, &normal_kernel);
const KernelRegistrar reg_randint(kernels::randint, DeviceType::kCPU, &randint_kernel);

}  // namespace
}  // namespace syncgrad::cpu
