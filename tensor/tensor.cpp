// Tensor metadata accessors, typed data access and item().
#include "tensor/tensor.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/views.h"

namespace syncgrad {

TensorImpl* Tensor::checked() const {
  SYNCGRAD_CHECK(impl_, ValueError, "Tensor: operation on an undefined tensor (default-constructed or moved-from)");
  return impl_.get();
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = ndim == 0 ? 1 : ndim;  // 0-dim tensors accept dims 0 and -1, as in PyTorch
  SYNCGRAD_CHECK(dim >= -n && dim < n, IndexError, op, ": dimension ", dim, " is out of range for a ", ndim,
                 "-d tensor (expected a value in [", -n, ", ", n - 1, "])");
  return dim < 0 ? dim + n : dim;
}

int64_t Tensor::size(int64_t dim) const { return sizes()[wrap_dim(dim, this->dim(), "size")]; }
int64_t Tensor::stride(int64_t dim) const { return strides()[wrap_dim(dim, this->dim(), "stride")]; }

template <class T> T* Tensor::data_ptr() const {
  SYNCGRAD_CHECK(dtype() == dtype_of<T>(), DTypeError, "data_ptr: tensor has dtype ", dtype_name(dtype()), " but ",
                 dtype_name(dtype_of<T>()), " was requested; convert with .to(dtype) first");
  return static_cast<T*>(checked()->data());
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template int32_t* Tensor::data_ptr<int32_t>() const;
template uint8_t* Tensor::data_ptr<uint8_t>() const;
template bool* Tensor::data_ptr<bool>() const;

Scalar Tensor::item() const {
  SYNCGRAD_CHECK(numel() == 1, ValueError, "item: a tensor with ", numel(), " elements (shape ", shape_str(sizes()),
                 ") cannot be converted to a scalar; only one-element tensors can");
  Tensor host = device().is_cpu() ? *this : raw::to(*this, kCPU);
  if (is_floating(dtype())) {
    double v = 0;
    raw::copy_(Tensor(std::make_shared<TensorImpl>(
                   std::make_shared<Storage>(&v, sizeof v, kCPU, nullptr), DType::f64, Shape{}, Shape{}, 0)),
               raw::reshape(host, {}));
    return Scalar(v);
  }
  if (dtype() == DType::boolean) return Scalar(*static_cast<const bool*>(host.data_ptr()));
  int64_t v = 0;
  raw::copy_(Tensor(std::make_shared<TensorImpl>(std::make_shared<Storage>(&v, sizeof v, kCPU, nullptr),
                                                 DType::i64, Shape{}, Shape{}, 0)),
             raw::reshape(host, {}));
  return Scalar(v);
}

template <class T> T Tensor::item() const {
  Scalar s = item();
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(s.to_double());
  } else if constexpr (std::is_same_v<T, bool>) {
    return s.to_double() != 0.0;
  } else {
    return static_cast<T>(s.is_floating() ? static_cast<int64_t>(s.to_double()) : s.to_int());
  }
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template int32_t Tensor::item<int32_t>() const;
template bool Tensor::item<bool>() const;

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  SYNCGRAD_CHECK(a.device() == b.device(), DeviceError, op, ": expected all tensors on the same device, but found ",
                 a.device().str(), " and ", b.device().str(), "; move one with .to(device)");
}

}  // namespace syncgrad
