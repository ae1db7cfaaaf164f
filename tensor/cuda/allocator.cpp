// The caching CUDA device allocator.
#include "tensor/cuda/allocator.h"

#include <cuda_runtime_api.h>

#include <bit>
#include <cstdio>
#include <string>

#include "tensor/cuda/check.h"
#include "tensor/cuda/context.h"
#include "tensor/errors.h"

namespace syncgrad::cuda {

namespace {

std::string mib(size_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + "." + std::to_string((bytes % (1024 * 1024)) * 10 / (1024 * 1024)) +
         " MiB";
}

}  // namespace

size_t CachingDeviceAllocator::size_class(size_t nbytes) {
  constexpr size_t kSmallGranule = 512;
  constexpr size_t kSmallLimit = size_t{1} << 20;
  if (nbytes <= kSmallLimit) return (nbytes + kSmallGranule - 1) / kSmallGranule * kSmallGranule;
  size_t step = std::bit_floor(nbytes) / 4;
  return (nbytes + step - 1) / step * step;
}

void* CachingDeviceAllocator::allocate(size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.num_allocs;
  if (nbytes == 0) return nullptr;
  const size_t cls = size_class(nbytes);
  void* ptr = nullptr;
  auto it = free_.find(cls);
  if (it != free_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= cls;
    ++stats_.num_cache_hits;
  } else {
    DeviceGuard guard(device_);
    cudaError_t err = cudaMalloc(&ptr, cls);
    if (err == cudaErrorMemoryAllocation) {
      // Give the cached blocks back to the driver and try once more.
      cudaGetLastError();
      release_cached_locked();
      err = cudaMalloc(&ptr, cls);
    }
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) cudaGetLastError();
      throw DeviceError("cuda:" + std::to_string(device_) + ": out of memory allocating " + std::to_string(nbytes) +
                        " bytes (" + mib(cls) + " block); this process holds " + mib(stats_.allocated_bytes) +
                        " in tensors, the device has " + mib(free_bytes) + " free of " + mib(total_bytes) +
                        "; try a smaller batch size");
    }
    if (err != cudaSuccess) {
      throw_cuda_error(err, ("cudaMalloc(" + std::to_string(cls) + " bytes) on cuda:" + std::to_string(device_)).c_str(),
                       __FILE__, __LINE__);
    }
  }
  live_.emplace(ptr, cls);
  stats_.allocated_bytes += cls;
  if (stats_.allocated_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = stats_.allocated_bytes;
  return ptr;
}

void CachingDeviceAllocator::deallocate(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    // Not ours (or freed twice): caching it would corrupt the free lists. Called from Storage's destructor,
    // so report instead of throwing (which would terminate).
    std::fprintf(stderr, "syncgrad: cuda:%d allocator: deallocate of %p (%zu bytes), a pointer it did not hand out "
                 "(double free?); ignored\n", device_, ptr, nbytes);
    return;
  }
  const size_t cls = it->second;
  live_.erase(it);
  stats_.allocated_bytes -= cls;
  stats_.cached_bytes += cls;
  free_[cls].push_back(ptr);
}

AllocatorStats CachingDeviceAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingDeviceAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
}

void CachingDeviceAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void CachingDeviceAllocator::release_cached_locked() {
  if (stats_.cached_bytes == 0) return;
  DeviceGuard guard(device_);
  cudaError_t first_error = cudaSuccess;
  for (auto& [cls, blocks] : free_) {
    for (void* p : blocks) {
      // cudaFree waits for work in flight on the device, so a block still read by a queued kernel is safe.
      cudaError_t err = cudaFree(p);
      if (err != cudaSuccess && first_error == cudaSuccess) first_error = err;
      stats_.cached_bytes -= cls;
    }
    blocks.clear();
  }
  free_.clear();
  if (first_error != cudaSuccess) {
    throw_cuda_error(first_error, ("cudaFree of cached blocks on cuda:" + std::to_string(device_)).c_str(), __FILE__,
                     __LINE__);
  }
}

}  // namespace syncgrad::cuda
