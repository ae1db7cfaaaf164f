// BufferPool: per-size free lists of blocks under one mutex. Each tensor's Storage releases its block back
// through a callback that holds the pool state alive; the state frees the cached blocks when the last owner
// (the pool or a batch outliving it) goes away.
#include "data/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensor/backend.h"
#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/ops/views.h"

namespace syncgrad::data {

struct BufferPool::State {
  DeviceBackend* pinned_backend = nullptr;  // set when blocks are page-locked memory of the CUDA backend
  mutable std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // block size -> blocks waiting for reuse
  BufferPoolStats stats;

  ~State() {
    for (auto& [size, blocks] : free_blocks) {
      for (void* block : blocks) release_block(block);
    }
  }

  void* new_block(size_t size) {
    if (pinned_backend != nullptr) {
      if (void* block = pinned_backend->host_alloc(size)) return block;
      throw DeviceError("DataLoader pin_memory: the CUDA backend could not allocate " + std::to_string(size) +
                        " bytes of pinned host memory; use pin_memory=false");
    }
    void* block = std::aligned_alloc(64, size);
    SYNCGRAD_CHECK(block != nullptr, Error, "DataLoader: out of host memory allocating a ", size, "-byte batch buffer");
    return block;
  }

  void release_block(void* block) {
    if (pinned_backend != nullptr) pinned_backend->host_free(block);
    else std::free(block);
  }

  // Before a pinned block is written again, any asynchronous copy still reading it must have finished.
  void wait_for_pending_copies() {
    for (int device = 0; device < pinned_backend->device_count(); ++device) pinned_backend->synchronize(device);
  }
};

BufferPool::BufferPool(bool pinned) : state_(std::make_shared<State>()) {
  if (pinned) state_->pinned_backend = device_backend(DeviceType::kCUDA);
}

BufferPool::~BufferPool() = default;

bool BufferPool::is_pinned() const { return state_->pinned_backend != nullptr; }

BufferPoolStats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

Tensor BufferPool::empty(const Shape& shape, DType dtype) {
  int64_t numel = 1;
  for (int64_t extent : shape) {
    SYNCGRAD_CHECK(extent >= 0, ValueError, "BufferPool::empty: negative extent in shape ", shape_str(shape));
    numel *= extent;
  }
  const size_t nbytes = static_cast<size_t>(numel) * element_size(dtype);
  const size_t size = (std::max<size_t>(nbytes, 1) + 63) / 64 * 64;  // whole 64-byte lines, at least one
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->free_blocks.find(size);
    if (it != state_->free_blocks.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      state_->stats.cached_bytes -= size;
      ++state_->stats.reuses;
    } else {
      ++state_->stats.fresh_allocations;
    }
    ++state_->stats.blocks_in_use;
  }
  try {
    if (block == nullptr) block = state_->new_block(size);
    else if (state_->pinned_backend != nullptr) state_->wait_for_pending_copies();
  } catch (...) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    --state_->stats.blocks_in_use;
    if (block != nullptr) {
      state_->free_blocks[size].push_back(block);
      state_->stats.cached_bytes += size;
    }
    throw;
  }
  std::shared_ptr<State> owner = state_;
  auto storage = std::make_shared<Storage>(block, nbytes, kCPU, [owner, size](void* ptr) {
    std::lock_guard<std::mutex> lock(owner->mutex);
    owner->free_blocks[size].push_back(ptr);
    owner->stats.cached_bytes += size;
    --owner->stats.blocks_in_use;
  });
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, shape, std::move(strides), 0));
}

}  // namespace syncgrad::data
