// The CUDA backend module's entry point: the DeviceBackend implementation (devices, allocators, copies,
// synchronisation) and syncgrad_backend_init(), which libsyncgrad calls after dlopen'ing this module on the
// first use of a CUDA device.
#include "tensor/backend.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/cuda/allocator.h"
#include "tensor/cuda/check.h"
#include "tensor/cuda/context.h"
#include "tensor/cuda/register.h"
#include "tensor/errors.h"

namespace syncgrad::cuda {
namespace {

class CudaBackend final : public DeviceBackend {
 public:
  CudaBackend() {
    const int n = cuda::device_count();
    allocators_.reserve(n);
    for (int i = 0; i < n; ++i) allocators_.push_back(std::make_unique<CachingDeviceAllocator>(i));
    name_ = "CUDA runtime " + runtime_version() + ", driver " + driver_version();
    if (n == 0) {
      name_ += " (" + device_count_problem() + ")";
    } else {
      name_ += ", " + std::to_string(n) + " device(s):";
      for (int i = 0; i < n; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
          name_ += std::string(i ? ", " : " ") + prop.name + " (sm_" + std::to_string(prop.major) +
                   std::to_string(prop.minor) + ")";
        } else {
          cudaGetLastError();
        }
      }
    }
  }

  std::string name() const override { return name_; }
  int device_count() const override { return static_cast<int>(allocators_.size()); }

  Allocator& allocator(int index) override {
    check_device_index(index, "CUDA allocator");
    return *allocators_[index];
  }

  void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                  bool non_blocking) override {
    if (nbytes == 0) return;
    const std::string what = "copy of " + std::to_string(nbytes) + " bytes from " + src_device.str() + " to " +
                             dst_device.str();
    try {
      if (dst_device.is_cpu() && src_device.is_cpu()) {
        std::memcpy(dst, src, nbytes);
        return;
      }
      if (dst_device.is_cuda() && src_device.is_cuda() && dst_device.index != src_device.index) {
        // Peer copy on the source's stream, after the destination's queued work; always completes before
        // returning (the destination stream would otherwise need an event).
        check_device_index(dst_device.index, "copy");
        check_device_index(src_device.index, "copy");
        SG_CUDA_CHECK(cudaStreamSynchronize(compute_stream(dst_device.index)));
        DeviceGuard guard(src_device.index);
        cudaStream_t stream = compute_stream(src_device.index);
        SG_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, nbytes, stream));
        SG_CUDA_CHECK(cudaStreamSynchronize(stream));
        return;
      }
      const int device = dst_device.is_cuda() ? dst_device.index : src_device.index;
      check_device_index(device, "copy");
      const cudaMemcpyKind kind = dst_device.is_cpu()   ? cudaMemcpyDeviceToHost
                                  : src_device.is_cpu() ? cudaMemcpyHostToDevice
                                                        : cudaMemcpyDeviceToDevice;
      DeviceGuard guard(device);
      cudaStream_t stream = compute_stream(device);
      // Ordered after the kernels queued on the device's compute stream. From/to pageable host memory the
      // runtime stages the bytes before returning, so a non_blocking source may be freed right away.
      SG_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, stream));
      if (!non_blocking) SG_CUDA_CHECK(cudaStreamSynchronize(stream));
    } catch (const DeviceError& e) {
      throw DeviceError(what + ": " + e.what());
    }
  }

  void synchronize(int index) override {
    check_device_index(index, "synchronize");
    DeviceGuard guard(index);
    SG_CUDA_CHECK(cudaStreamSynchronize(compute_stream(index)));
    SG_CUDA_CHECK(cudaDeviceSynchronize());
  }

  // cudaHostAlloc returns page-aligned memory; a failure (pinned memory is limited) reads as "no pinned memory".
  void* host_alloc(size_t nbytes) override {
    void* ptr = nullptr;
    if (cudaHostAlloc(&ptr, nbytes == 0 ? 1 : nbytes, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return ptr;
  }

  // Called from destructors: a failure is cleared rather than thrown.
  void host_free(void* ptr) override {
    if (ptr != nullptr && cudaFreeHost(ptr) != cudaSuccess) cudaGetLastError();
  }

 private:
  std::string name_;
  std::vector<std::unique_ptr<CachingDeviceAllocator>> allocators_;
};

}  // namespace
}  // namespace syncgrad::cuda

static_assert(std::string_view(syncgrad::kBackendInitSymbol) == "syncgrad_backend_init",
              "the exported init function must carry the name libsyncgrad looks up");

// Registers the backend (always, so its name and the reason for "no device" reach the user) and, when a
// device exists, the CUDA kernels and the "nccl" process group. Called once by libsyncgrad
// (tensor/backend.cpp) right after dlopen.
extern "C" __attribute__((visibility("default"))) void syncgrad_backend_init() {
  using namespace syncgrad;
  // Never destroyed: tensors held by static objects may be freed after main returns.
  static cuda::CudaBackend* backend = [] {
    auto* b = new cuda::CudaBackend();
    if (b->device_count() > 0) {
      cuda::register_copy_kernels();
      cuda::register_elementwise_kernels();
      cuda::register_reduce_kernels();
      cuda::register_softmax_kernels();
      cuda::register_loss_kernels();
      cuda::register_indexing_kernels();
      cuda::register_random_kernels();
      cuda::register_optim_kernels();
      cuda::register_gemm_kernels();
      cuda::register_norm_kernels();
      cuda::register_pool_kernels();
      cuda::register_conv_kernels();
      cuda::register_attention_kernels();
      cuda::register_nccl_process_group();
    }
    return b;
  }();
  register_device_backend(DeviceType::kCUDA, backend);
}
