// The CUDA device memory behind the caching device allocator: size classes, cudaMalloc / cudaFree on the
// allocator's device, and the out-of-memory error.
#include "tensor/cuda/allocator.h"

#include <cuda_runtime_api.h>

#include <bit>
#include <cstdio>
#include <string>

#include "tensor/cuda/check.h"
#include "tensor/cuda/context.h"
#include "tensor/errors.h"
#include "tensor/out_of_memory_context.h"

namespace syncgrad::cuda {

namespace {

std::string mib(size_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + "." + std::to_string((bytes % (1024 * 1024)) * 10 / (1024 * 1024)) +
         " MiB";
}

}  // namespace

size_t DeviceMemory::size_class(size_t nbytes) {
  constexpr size_t kSmallGranule = 512;
  constexpr size_t kSmallLimit = size_t{1} << 20;
  if (nbytes <= kSmallLimit) return (nbytes + kSmallGranule - 1) / kSmallGranule * kSmallGranule;
  size_t step = std::bit_floor(nbytes) / 4;
  return (nbytes + step - 1) / step * step;
}

void* DeviceMemory::allocate(size_t block_bytes) {
  DeviceGuard guard(device_);
  void* ptr = nullptr;
  const cudaError_t err = cudaMalloc(&ptr, block_bytes);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  if (err != cudaSuccess) {
    const std::string what = "cudaMalloc(" + std::to_string(block_bytes) + " bytes) on cuda:" + std::to_string(device_);
    throw_cuda_error(err, what.c_str(), __FILE__, __LINE__);
  }
  return ptr;
}

void DeviceMemory::free(std::span<const CachedBlock> blocks) {
  DeviceGuard guard(device_);
  cudaError_t first_error = cudaSuccess;
  for (const CachedBlock& block : blocks) {
    const cudaError_t err = cudaFree(block.ptr);
    if (err != cudaSuccess && first_error == cudaSuccess) first_error = err;
  }
  if (first_error != cudaSuccess) {
    throw_cuda_error(first_error, ("cudaFree of cached blocks on cuda:" + std::to_string(device_)).c_str(), __FILE__,
                     __LINE__);
  }
}

void DeviceMemory::out_of_memory(size_t nbytes, size_t block_bytes, const AllocatorStats& stats) const {
  DeviceGuard guard(device_);  // cudaMemGetInfo reports the current device
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) cudaGetLastError();
  throw DeviceError("cuda:" + std::to_string(device_) + ": out of memory allocating " + describe_bytes(nbytes) +
                    " (" + mib(block_bytes) + " block)" + out_of_memory_during() + "; this process holds " +
                    mib(stats.allocated_bytes) + " in tensors, the device has " + mib(free_bytes) + " free of " +
                    mib(total_bytes) + out_of_memory_hint());
}

void DeviceMemory::report_foreign_free(void* ptr, size_t nbytes) const {
  std::fprintf(stderr, "syncgrad: cuda:%d allocator: deallocate of %p (%zu bytes), a pointer it did not hand out "
               "(double free?); ignored\n", device_, ptr, nbytes);
}

}  // namespace syncgrad::cuda
