// Host-side glue of the CUDA fill and copy kernels: checks, geometry, dtype value conversion, and their
// registration into the dispatch table (kernels::fill, kernels::copy from tensor/ops/copy.h).
#include <cuda_runtime_api.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>

#include "tensor/check.h"
#include "tensor/cuda/check.h"
#include "tensor/cuda/context.h"
#include "tensor/cuda/launch.h"
#include "tensor/cuda/layout.h"
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/views.h"
#include "tensor/storage.h"

namespace syncgrad::cuda {
namespace {

// The bit pattern of `value` as one element of `dtype`, produced by the CPU fill kernel itself so that a CUDA
// fill is bit-identical to a CPU fill (same rounding of doubles to half types, same integer truncation).
uint64_t element_bits(DType dtype, const Scalar& value) {
  alignas(8) unsigned char buffer[8] = {};
  auto storage = std::make_shared<Storage>(buffer, sizeof buffer, kCPU, [](void*) {});
  Tensor element(std::make_shared<TensorImpl>(storage, dtype, Shape{}, Shape{}, 0));
  kernels::fill.get(DeviceType::kCPU)(element, value);
  uint64_t bits = 0;
  std::memcpy(&bits, buffer, element_size(dtype));
  return bits;
}

void fill_kernel(const Tensor& out, const Scalar& value) {
  if (out.numel() == 0) return;
  const uint64_t bits = element_bits(out.dtype(), value);
  const int element_bytes = static_cast<int>(out.element_size());
  on_device("fill_", out.device(), [&](cudaStream_t stream) {
    for_each_geometry<1>(out.sizes(), {static_cast<char*>(out.data_ptr())}, {&out}, LayoutMode::kWriteOnceAny,
                         [&](const std::array<char*, 1>& ptrs, const Geometry<1>& g) {
                           launch_fill(ptrs[0], element_bytes, bits, g, stream);
                         });
  });
}

void copy_kernel(const Tensor& dst, const Tensor& src) {
  SYNCGRAD_CHECK(dst.device() == src.device(), DeviceError,
                 "copy_: the CUDA copy kernel needs both tensors on one device, got ", dst.device().str(), " and ",
                 src.device().str());
  SYNCGRAD_CHECK(dst.sizes() == src.sizes(), ShapeError,
                 "copy_: the CUDA copy kernel needs equal shapes (source already expanded), got destination ",
                 shape_str(dst.sizes()), " and source ", shape_str(src.sizes()));
  if (dst.numel() == 0) return;
  on_device("copy_", dst.device(), [&](cudaStream_t stream) {
    if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
      if (dst.data_ptr() != src.data_ptr()) {
        SG_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyDeviceToDevice, stream));
      }
      return;
    }
    for_each_geometry<2>(dst.sizes(), {static_cast<char*>(dst.data_ptr()), static_cast<char*>(src.data_ptr())},
                         {&dst, &src}, LayoutMode::kOrdered,
                         [&](const std::array<char*, 2>& ptrs, const Geometry<2>& g) {
                           launch_copy(ptrs[0], dst.dtype(), ptrs[1], src.dtype(), g, stream);
                         });
  });
}

}  // namespace

void register_copy_kernels() {
  kernels::fill.set(DeviceType::kCUDA, &fill_kernel);
  kernels::copy.set(DeviceType::kCUDA, &copy_kernel);
}

}  // namespace syncgrad::cuda
