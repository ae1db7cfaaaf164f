// The caching CPU allocator: blocks are rounded up to size classes (4 per power of two, so at most 25%
// waste), 64-byte aligned, and kept on per-class free lists when freed, so a training loop that allocates the
// same shapes every step touches fresh pages only in its first step.
#include "tensor/allocator.h"

#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/backend.h"
#include "tensor/errors.h"
#include "tensor/memory_tag.h"

namespace syncgrad {
namespace {

constexpr size_t kAlignment = 64;

size_t size_class(size_t nbytes) {
  if (nbytes <= 256) return 256;
  // Round up to one of four steps between consecutive powers of two.
  size_t top = std::bit_floor(nbytes);
  size_t step = top / 4;
  return (nbytes + step - 1) / step * step;
}

class CachingCpuAllocator final : public Allocator {
 public:
  ~CachingCpuAllocator() override { release_all(); }

  void* allocate(size_t nbytes) override {
    size_t cls = size_class(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.num_allocs;
    void* ptr = nullptr;
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= cls;
      ++stats_.num_cache_hits;
    } else {
      ptr = std::aligned_alloc(kAlignment, cls);
      if (ptr == nullptr) {
        throw Error("cpu allocator: out of memory allocating " + std::to_string(nbytes) +
                    " bytes (allocated now: " + std::to_string(stats_.allocated_bytes) +
                    ", cached: " + std::to_string(stats_.cached_bytes) + "); try a smaller batch size");
      }
    }
    stats_.allocated_bytes += cls;
    if (stats_.allocated_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = stats_.allocated_bytes;
    detail::note_tagged_allocate(ptr, cls);
    return ptr;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    size_t cls = size_class(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    detail::note_tagged_free(ptr, cls);
    stats_.allocated_bytes -= cls;
    stats_.cached_bytes += cls;
    free_[cls].push_back(ptr);
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_peak() override {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }

  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mutex_);
    release_all();
  }

 private:
  void release_all() {
    for (auto& [cls, blocks] : free_) {
      for (void* p : blocks) std::free(p);
      stats_.cached_bytes -= cls * blocks.size();
      blocks.clear();
    }
  }

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  AllocatorStats stats_;
};

}  // namespace

Allocator& cpu_allocator() {
  // Never destroyed: tensors held by static objects may be freed after main returns.
  static auto* instance = new CachingCpuAllocator();
  return *instance;
}

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) return cpu_allocator();
  DeviceBackend* backend = device_backend(device.type);
  if (backend == nullptr) {
    throw DeviceError("allocate on " + device.str() + ": " + backend_unavailable_reason(device.type));
  }
  if (device.index < 0 || device.index >= backend->device_count()) {
    throw DeviceError("allocate on " + device.str() + ": device index out of range (" +
                      std::to_string(backend->device_count()) + " device(s) visible); check CUDA_VISIBLE_DEVICES");
  }
  return backend->allocator(device.index);
}

}  // namespace syncgrad
