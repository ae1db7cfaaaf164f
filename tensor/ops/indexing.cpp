// Raw indexing front-ends: argument checks (devices, index dtype, ranks, sizes), output allocation, the line
// views the kernels walk (kernels::IndexLines) and dispatch. Index values are range-checked by the kernels,
// which read them.
#include "tensor/ops/indexing.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const IndexLines&)> index_select("index_select");
constinit KernelSlot<void(const IndexLines&, const Tensor&)> index_add("index_add_");
constinit KernelSlot<void(const Tensor&, const IndexLines&)> gather("gather");
constinit KernelSlot<void(const IndexLines&, const Tensor&)> scatter_add("scatter_add_");
}  // namespace kernels

namespace {

// 0-d tensors take part as 1-element 1-D tensors, as in PyTorch.
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? raw::view(t, {1}) : t; }

void check_index_dtype(const char* op, const Tensor& index, bool allow_int32) {
  DType t = index.dtype();
  SYNCGRAD_CHECK(t == DType::i64 || (allow_int32 && t == DType::i32), DTypeError, op, ": index must have dtype int64",
                 allow_int32 ? " or int32" : "", ", got ", dtype_name(t), "; convert it with .to(DType::i64)");
}

void check_same_dtype(const char* op, const Tensor& self, const Tensor& src) {
  SYNCGRAD_CHECK(self.dtype() == src.dtype(), DTypeError, op, ": self has dtype ", dtype_name(self.dtype()),
                 " but src has dtype ", dtype_name(src.dtype()), "; convert src with .to(", dtype_name(self.dtype()),
                 ") first");
}

void check_list_index(const char* op, const Tensor& index) {
  SYNCGRAD_CHECK(index.dim() <= 1, ShapeError, op, ": index must be 1-D or 0-d, got shape ", shape_str(index.sizes()),
                 "; flatten it or use gather for per-element indices");
}

void check_same_rank(const char* op, const Tensor& index, const char* other_name, const Tensor& other) {
  SYNCGRAD_CHECK(index.dim() == other.dim(), ShapeError, op, ": index has ", index.dim(), " dims (shape ",
                 shape_str(index.sizes()), ") but ", other_name, " has ", other.dim(), " (shape ",
                 shape_str(other.sizes()), "); they need the same number of dims");
}

// index.size(k) <= other.size(k) for every k (except `dim` when skip_dim).
void check_index_fits(const char* op, const Tensor& index, const char* other_name, const Tensor& other, int64_t dim,
                      bool skip_dim) {
  for (int64_t k = 0; k < index.dim(); ++k) {
    SYNCGRAD_CHECK((skip_dim && k == dim) || index.sizes()[k] <= other.sizes()[k], ShapeError, op, ": index size ",
                   index.sizes()[k], " exceeds ", other_name, " size ", other.sizes()[k], " in dimension ", k,
                   " (index shape ", shape_str(index.sizes()), ", ", other_name, " shape ", shape_str(other.sizes()),
                   ")", skip_dim ? "; only dimension " + std::to_string(dim) + " may be larger" : std::string());
  }
}

// `t` seen with `sizes` and t's strides except 0 along `dim`.
Tensor slice_base(const Tensor& t, const Shape& sizes, int64_t dim) {
  Shape strides = t.strides();
  strides[dim] = 0;
  return raw::as_strided(t, sizes, strides, t.storage_offset());
}

// A 1-D index broadcast to `sizes`: it varies along `dim` only.
Tensor broadcast_list_index(const Tensor& index, const Shape& sizes, int64_t dim) {
  Shape strides(sizes.size(), 0);
  strides[dim] = index.strides()[0];
  return raw::as_strided(index, sizes, strides, index.storage_offset());
}

// The lines of index_select / index_add_: a 1-D list of positions applied to whole slices of `sizes`.
kernels::IndexLines list_lines(const char* op, const Tensor& indexed, int64_t dim, const Tensor& index,
                               const Shape& sizes) {
  return {op, indexed, dim, index, slice_base(indexed, sizes, dim), broadcast_list_index(index, sizes, dim)};
}

// The lines of gather / scatter_add_: one position per element of `index`.
kernels::IndexLines element_lines(const char* op, const Tensor& indexed, int64_t dim, const Tensor& index) {
  return {op, indexed, dim, index, slice_base(indexed, index.sizes(), dim), index};
}

}  // namespace

namespace raw {

Tensor index_select(const Tensor& input, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  check_same_device(op, input, index);
  check_index_dtype(op, index, true);
  check_list_index(op, index);
  int64_t d = wrap_dim(dim, input.dim(), op);
  SYNCGRAD_CHECK(input.dim() != 0 || index.numel() == 1, ShapeError,
                 "index_select: a 0-d input takes exactly one index, got ", index.numel(), " (index shape ",
                 shape_str(index.sizes()), ")");
  Tensor in = as_1d(input);
  Shape out_shape = in.sizes();
  out_shape[d] = index.numel();
  Tensor out = empty(out_shape, {.dtype = input.dtype(), .device = input.device()});
  kernels::index_select(input.device(), out, list_lines(op, in, d, as_1d(index), out_shape));
  return input.dim() == 0 ? view(out, {}) : out;
}

void index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const char* op = "index_add_";
  check_same_device(op, self, index);
  check_same_device(op, self, src);
  check_index_dtype(op, index, true);
  check_same_dtype(op, self, src);
  check_list_index(op, index);
  int64_t d = wrap_dim(dim, self.dim(), op);
  Tensor target = as_1d(self);
  Tensor source = as_1d(src);
  Shape expected = target.sizes();
  expected[d] = index.numel();
  SYNCGRAD_CHECK(source.sizes() == expected, ShapeError, "index_add_: src has shape ", shape_str(src.sizes()),
                 " but self of shape ", shape_str(self.sizes()), " with ", index.numel(), " indices along dimension ",
                 d, " needs src of shape ", shape_str(expected));
  kernels::index_add(self.device(), list_lines(op, target, d, as_1d(index), source.sizes()), source);
  self.impl()->storage()->bump_version();
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = clone(self);
  index_add_(out, dim, index, src);
  return out;
}

Tensor gather(const Tensor& input, int64_t dim, const Tensor& index) {
  const char* op = "gather";
  check_same_device(op, input, index);
  check_index_dtype(op, index, false);
  check_same_rank(op, index, "input", input);
  int64_t d = wrap_dim(dim, input.dim(), op);
  check_index_fits(op, index, "input", input, d, true);
  Tensor out = empty(index.sizes(), {.dtype = input.dtype(), .device = input.device()});
  kernels::gather(input.device(), as_1d(out), element_lines(op, as_1d(input), d, as_1d(index)));
  return out;
}

void scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const char* op = "scatter_add_";
  check_same_device(op, self, index);
  check_same_device(op, self, src);
  check_index_dtype(op, index, false);
  check_same_dtype(op, self, src);
  check_same_rank(op, index, "self", self);
  check_same_rank(op, index, "src", src);
  int64_t d = wrap_dim(dim, self.dim(), op);
  check_index_fits(op, index, "src", src, d, false);
  check_index_fits(op, index, "self", self, d, true);
  const kernels::IndexLines lines = element_lines(op, as_1d(self), d, as_1d(index));
  const Tensor source = as_1d(src);
  kernels::scatter_add(self.device(), lines, as_strided(source, lines.index.sizes(), source.strides(),
                                                        source.storage_offset()));
  self.impl()->storage()->bump_version();
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = clone(self);
  scatter_add_(out, dim, index, src);
  return out;
}

}  // namespace raw
}  // namespace syncgrad
