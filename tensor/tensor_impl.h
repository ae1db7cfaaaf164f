// TensorImpl: the state behind a Tensor handle: storage + sizes + strides (in elements) + storage offset +
// dtype, and an opaque slot for autograd metadata (defined by autograd/, which tensor/ never includes).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/storage.h"

namespace syncgrad {

using Shape = std::vector<int64_t>;

// Implemented by autograd::AutogradMeta; tensor/ only owns and destroys it.
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
};

class TensorImpl {
 public:
  TensorImpl(std::shared_ptr<Storage> storage, DType dtype, Shape sizes, Shape strides, int64_t offset);

  const std::shared_ptr<Storage>& storage() const { return storage_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }
  int64_t storage_offset() const { return offset_; }
  int64_t numel() const { return numel_; }
  bool is_contiguous() const { return contiguous_; }
  // Address of element 0 of this view.
  void* data() const {
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(element_size(dtype_));
  }

  // Re-points this impl at other metadata (used by in-place resize and set_).
  void set_geometry(Shape sizes, Shape strides, int64_t offset);
  // Makes this impl hold `source`'s data (storage, dtype and geometry) while keeping its identity and autograd
  // metadata: nn::Module::to converts parameters in place this way, so every handle to them sees the result.
  void set_data(const TensorImpl& source);

  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) { autograd_meta_ = std::move(meta); }

 private:
  void refresh();

  std::shared_ptr<Storage> storage_;
  DType dtype_;
  Shape sizes_;
  Shape strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 1;
  bool contiguous_ = true;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
};

}  // namespace syncgrad
