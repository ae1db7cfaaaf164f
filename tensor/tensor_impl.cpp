// TensorImpl: cached numel (overflow-checked) and contiguity.
#include "tensor/tensor_impl.h"

#include "tensor/numel.h"

namespace syncgrad {

TensorImpl::TensorImpl(std::shared_ptr<Storage> storage, DType dtype, Shape sizes, Shape strides, int64_t offset)
    : storage_(std::move(storage)), dtype_(dtype), sizes_(std::move(sizes)), strides_(std::move(strides)),
      offset_(offset) {
  refresh();
}

void TensorImpl::set_geometry(Shape sizes, Shape strides, int64_t offset) {
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  offset_ = offset;
  refresh();
}

void TensorImpl::set_data(const TensorImpl& source) {
  storage_ = source.storage_;
  dtype_ = source.dtype_;
  set_geometry(source.sizes_, source.strides_, source.offset_);
}

void TensorImpl::refresh() {
  numel_ = checked_numel(sizes_, "tensor");
  contiguous_ = true;
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) {
      contiguous_ = false;
      break;
    }
    expected *= sizes_[i];
  }
}

}  // namespace syncgrad
