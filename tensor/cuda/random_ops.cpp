// Host glue of the CUDA random kernels (random.cu): registers kernels::dropout, uniform, normal and randint.
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/random_kernels.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/dropout.h"
#include "tensor/ops/factories.h"

namespace syncgrad::cuda {
namespace {

void dropout_kernel(const Tensor& out, const Tensor& mask, const Tensor& input, double p, uint64_t seed,
                    uint64_t first) {
  require_floating("dropout", input.dtype());
  on_device("dropout", input.device(), [&](cudaStream_t stream) {
    launch_dropout(input.dtype(), out.data_ptr(), mask.data_ptr(), input.data_ptr(), input.numel(), p, seed, first,
                   stream);
  });
}

void uniform_kernel(const Tensor& out, double low, double high, uint64_t seed, uint64_t first) {
  require_floating("rand", out.dtype());
  on_device("rand", out.device(), [&](cudaStream_t stream) {
    launch_uniform(out.dtype(), out.data_ptr(), out.numel(), low, high, seed, first, stream);
  });
}

void normal_kernel(const Tensor& out, double mean, double stddev, uint64_t seed, uint64_t first) {
  require_floating("randn", out.dtype());
  on_device("randn", out.device(), [&](cudaStream_t stream) {
    launch_normal(out.dtype(), out.data_ptr(), out.numel(), mean, stddev, seed, first, stream);
  });
}

void randint_kernel(const Tensor& out, int64_t low, int64_t high, uint64_t seed, uint64_t first) {
  require_numeric("randint", out.dtype());
  on_device("randint", out.device(), [&](cudaStream_t stream) {
    launch_randint(out.dtype(), out.data_ptr(), out.numel(), low, high, seed, first, stream);
  });
}

}  // namespace

void register_random_kernels() {
  kernels::dropout.set(DeviceType::kCUDA, &dropout_kernel);
  kernels::uniform.set(DeviceType::kCUDA, &uniform_kernel);
  kernels::normal.set(DeviceType::kCUDA, &normal_kernel);
  kernels::randint.set(DeviceType::kCUDA, &randint_kernel);
}

}  // namespace syncgrad::cuda
