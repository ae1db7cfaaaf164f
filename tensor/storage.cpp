// Storage: allocation through the device allocator, or adoption of external memory.
#include "tensor/storage.h"

namespace syncgrad {

Storage::Storage(size_t nbytes, Device device)
    : nbytes_(nbytes), device_(device), allocator_(&allocator_for(device)) {
  data_ = allocator_->allocate(nbytes);
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> release)
    : data_(data), nbytes_(nbytes), device_(device), release_(std::move(release)) {}

Storage::~Storage() {
  if (allocator_ != nullptr) {
    allocator_->deallocate(data_, nbytes_);
  } else if (release_) {
    release_(data_);
  }
}

}  // namespace syncgrad
