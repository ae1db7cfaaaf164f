// Tensor: a cheap value handle on a TensorImpl; copies alias the same data. Metadata accessors live here;
// the differentiable convenience methods (view, sum, backward, ...) are defined in autograd/ beside the ops
// they forward to -- the one link-time dependency of tensor/ on autograd/ (both are in libsyncgrad).
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/errors.h"
#include "tensor/scalar.h"
#include "tensor/tensor_impl.h"

namespace syncgrad {

namespace autograd {
class Node;
}

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- metadata (tensor/tensor.cpp) ----
  const Shape& sizes() const { return checked()->sizes(); }
  const Shape& strides() const { return checked()->strides(); }
  int64_t size(int64_t dim) const;    // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(checked()->sizes().size()); }
  int64_t numel() const { return checked()->numel(); }
  DType dtype() const { return checked()->dtype(); }
  Device device() const { return checked()->device(); }
  bool is_contiguous() const { return checked()->is_contiguous(); }
  int64_t storage_offset() const { return checked()->storage_offset(); }
  size_t element_size() const { return syncgrad::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  void* data_ptr() const { return checked()->data(); }
  // Typed pointer to element 0; throws DTypeError when T does not match dtype().
  template <class T> T* data_ptr() const;
  // The value of a one-element tensor (any device); throws ValueError otherwise.
  Scalar item() const;
  template <class T> T item() const;
  // Bumped by every in-place write to the underlying storage.
  uint64_t version() const { return checked()->storage()->version(); }
  std::string to_string() const;

  // ---- autograd state (autograd/tensor_autograd.cpp) ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool value = true);
  bool is_leaf() const;
  // The accumulated gradient of a leaf (undefined until a backward reaches it).
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  // Backpropagates from this tensor; a non-scalar needs `gradient` of the same shape.
  void backward(const Tensor& gradient = {}, bool retain_graph = false) const;
  // Shares data, drops history.
  Tensor detach() const;
  // Keeps .grad for a non-leaf tensor during backward.
  void retain_grad() const;
  // Runs on the gradient flowing into this tensor; may return a replacement (or an undefined tensor to keep it).
  void register_hook(std::function<Tensor(const Tensor&)> hook) const;
  // For leaves: runs after this backward has finished accumulating into .grad (DDP's seam).
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;

  // ---- differentiable conveniences (defined with the ops in autograd/ops/) ----
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(const Shape& dims) const;
  Tensor t() const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor expand(const Shape& shape) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType dtype) const;
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor sum() const;
  Tensor mean() const;

 private:
  TensorImpl* checked() const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Raises DeviceError naming `op` and both devices when the tensors are on different devices.
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
// Raises ValueError/ShapeError helpers used by op front-ends.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace syncgrad
