// Dataset index checking, TensorDataset and MnistDataset.
#include "data/dataset.h"

#include <utility>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/ops/views.h"

namespace syncgrad::data {

Dataset::~Dataset() = default;

Example Dataset::fetch(int64_t index, Generator&) const { return get(index); }

void Dataset::check_index(int64_t index) const {
  const int64_t n = size();
  SYNCGRAD_CHECK(index >= 0 && index < n, IndexError, "Dataset::get: index ", index,
                 " is out of range for a dataset of size ", n, " (valid: [0, ", n, "))");
}

TensorDataset::TensorDataset(Tensor data, Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {
  SYNCGRAD_CHECK(data_.dim() != 0 && targets_.dim() != 0 && data_.size(0) == targets_.size(0), ShapeError,
                 "TensorDataset: data ", shape_str(data_.sizes()), " and targets ", shape_str(targets_.sizes()),
                 " need at least one dim and the same first dim");
}

int64_t TensorDataset::size() const { return data_.size(0); }

Example TensorDataset::get(int64_t index) const {
  check_index(index);
  return {raw::select(data_, 0, index), raw::select(targets_, 0, index)};
}

MnistDataset::MnistDataset(const std::string& dir, bool train) : split_(load_fashion_mnist(dir, train)) {}

int64_t MnistDataset::size() const { return split_.images.size(0); }

Example MnistDataset::get(int64_t index) const {
  check_index(index);
  return {raw::select(split_.images, 0, index), raw::select(split_.labels, 0, index)};
}

}  // namespace syncgrad::data
