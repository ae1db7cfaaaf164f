// Raw view ops and shape helpers.
#include "tensor/ops/views.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "tensor/check.h"
#include "tensor/numel.h"
#include "tensor/ops/copy.h"

namespace syncgrad {

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

int64_t shape_numel(const Shape& shape) { return checked_numel(shape, "shape_numel"); }

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

Shape infer_shape(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      SYNCGRAD_CHECK(infer_at < 0, ShapeError, op, ": only one dimension can be -1, got ", shape_str(shape));
      infer_at = static_cast<int>(i);
    } else if (out[i] < 0) {
      throw ShapeError(std::string(op) + ": invalid size " + std::to_string(out[i]) + " in shape " + shape_str(shape));
    }
  }
  if (infer_at >= 0) out[infer_at] = 1;  // the known dims' product, counted without the -1
  int64_t known = checked_numel(out, op);
  if (infer_at >= 0) {
    SYNCGRAD_CHECK(known != 0 && numel % known == 0, ShapeError, op, ": shape ", shape_str(shape),
                   " is invalid for input of size ", numel);
    out[infer_at] = numel / known;
  } else if (known != numel) {
    throw ShapeError(std::string(op) + ": shape " + shape_str(shape) + " is invalid for input of size " +
                     std::to_string(numel) + " (the new shape must have the same number of elements)");
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    SYNCGRAD_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": shapes ", shape_str(a), " and ", shape_str(b),
                   " cannot be broadcast (dimension ", i, ": ", da, " vs ", db, "); sizes must match or be 1");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace raw {

Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t storage_offset) {
  return Tensor(std::make_shared<TensorImpl>(t.impl()->storage(), t.dtype(), sizes, strides, storage_offset));
}

Tensor alias(const Tensor& t) { return as_strided(t, t.sizes(), t.strides(), t.storage_offset()); }

namespace {

// Strides for viewing `t` as `shape` without copying; false when impossible. Walks the old dims from the
// innermost, grouping them into chunks that are contiguous among themselves, and requires every chunk to be
// covered exactly by a run of new dims.
bool view_strides(const Tensor& t, const Shape& shape, Shape& out) {
  const Shape& old_sizes = t.sizes();
  const Shape& old_strides = t.strides();
  out.assign(shape.size(), 0);
  if (t.numel() == 0 || t.dim() == 0) {
    out = contiguous_strides(shape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 ||
        (old_sizes[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return false;
  return true;
}

}  // namespace

Tensor view(const Tensor& t, const Shape& shape) {
  Shape sizes = infer_shape(shape, t.numel(), "view");
  Shape strides;
  SYNCGRAD_CHECK(view_strides(t, sizes, strides), ShapeError, "view: size ", shape_str(sizes),
                 " is not compatible with input of shape ", shape_str(t.sizes()), " and strides ",
                 shape_str(t.strides()),
                 " (at least one dimension spans two contiguous subspaces); use reshape() or .contiguous()");
  return as_strided(t, sizes, strides, t.storage_offset());
}

Tensor reshape(const Tensor& t, const Shape& shape) {
  Shape sizes = infer_shape(shape, t.numel(), "reshape");
  Shape strides;
  if (view_strides(t, sizes, strides)) return as_strided(t, sizes, strides, t.storage_offset());
  return view(clone(t), sizes);
}

Tensor permute(const Tensor& t, const Shape& dims) {
  int64_t nd = t.dim();
  SYNCGRAD_CHECK(static_cast<int64_t>(dims.size()) == nd, ShapeError, "permute: got ", dims.size(), " dims ",
                 shape_str(dims), " for a ", nd, "-d tensor of shape ", shape_str(t.sizes()),
                 "; give one entry per dim");
  Shape sizes(nd), strides(nd);
  std::vector<bool> seen(nd, false);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t d = wrap_dim(dims[i], nd, "permute");
    SYNCGRAD_CHECK(!seen[d], ShapeError, "permute: dim ", d, " repeats in ", shape_str(dims));
    seen[d] = true;
    sizes[i] = t.sizes()[d];
    strides[i] = t.strides()[d];
  }
  return as_strided(t, sizes, strides, t.storage_offset());
}

Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1) {
  int64_t nd = t.dim();
  if (nd == 0) return alias(t);
  dim0 = wrap_dim(dim0, nd, "transpose");
  dim1 = wrap_dim(dim1, nd, "transpose");
  Shape sizes = t.sizes(), strides = t.strides();
  std::swap(sizes[dim0], sizes[dim1]);
  std::swap(strides[dim0], strides[dim1]);
  return as_strided(t, sizes, strides, t.storage_offset());
}

Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step) {
  SYNCGRAD_CHECK(t.dim() != 0, IndexError, "slice: cannot slice a 0-d tensor");
  dim = wrap_dim(dim, t.dim(), "slice");
  SYNCGRAD_CHECK(step > 0, ValueError, "slice: step must be positive, got ", step);
  int64_t size = t.sizes()[dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape sizes = t.sizes(), strides = t.strides();
  sizes[dim] = (end - start + step - 1) / step;
  strides[dim] *= step;
  return as_strided(t, sizes, strides, t.storage_offset() + start * t.strides()[dim]);
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  SYNCGRAD_CHECK(t.dim() != 0, IndexError, "narrow: cannot narrow a 0-d tensor");
  dim = wrap_dim(dim, t.dim(), "narrow");
  int64_t size = t.sizes()[dim];
  if (start < 0) start += size;
  SYNCGRAD_CHECK(start >= 0 && length >= 0 && start + length <= size, IndexError, "narrow: start ", start, " + length ",
                 length, " is out of range for dimension ", dim, " of size ", size, " (shape ", shape_str(t.sizes()),
                 ")");
  Shape sizes = t.sizes();
  sizes[dim] = length;
  return as_strided(t, sizes, t.strides(), t.storage_offset() + start * t.strides()[dim]);
}

Tensor select(const Tensor& t, int64_t dim, int64_t index) {
  SYNCGRAD_CHECK(t.dim() != 0, IndexError, "select: cannot select from a 0-d tensor");
  dim = wrap_dim(dim, t.dim(), "select");
  int64_t size = t.sizes()[dim];
  SYNCGRAD_CHECK(index >= -size && index < size, IndexError, "select: index ", index, " is out of range for dimension ",
                 dim, " of size ", size, " (shape ", shape_str(t.sizes()), ")");
  if (index < 0) index += size;
  Shape sizes = t.sizes(), strides = t.strides();
  int64_t offset = t.storage_offset() + index * strides[dim];
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return as_strided(t, sizes, strides, offset);
}

Tensor expand(const Tensor& t, const Shape& shape) {
  int64_t nd = static_cast<int64_t>(shape.size());
  int64_t old_nd = t.dim();
  SYNCGRAD_CHECK(nd >= old_nd, ShapeError, "expand: the target shape ", shape_str(shape),
                 " has fewer dims than the tensor's ", shape_str(t.sizes()));
  Shape sizes(nd), strides(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t j = i - (nd - old_nd);
    if (j >= 0) {
      int64_t old_size = t.sizes()[j];
      int64_t want = shape[i] == -1 ? old_size : shape[i];
      SYNCGRAD_CHECK(want >= 0, ShapeError, "expand: invalid size ", shape[i], " for dimension ", i, " (target ",
                     shape_str(shape), "; a size is >= 0, or -1 to keep the tensor's)");
      if (old_size == want) {
        sizes[i] = want;
        strides[i] = t.strides()[j];
      } else if (old_size == 1) {
        sizes[i] = want;
        strides[i] = 0;
      } else {
        throw ShapeError("expand: the size of dimension " + std::to_string(i) + " (" + std::to_string(old_size) +
                         ") must match the target " + std::to_string(shape[i]) + " or be 1; tensor shape " +
                         shape_str(t.sizes()) + ", target " + shape_str(shape));
      }
    } else {
      SYNCGRAD_CHECK(shape[i] >= 0, ShapeError, "expand: invalid size ", shape[i],
                     " for a new leading dimension (target ", shape_str(shape), "; -1 only keeps an existing size)");
      sizes[i] = shape[i];
      strides[i] = 0;
    }
  }
  checked_numel(sizes, "expand");
  return as_strided(t, sizes, strides, t.storage_offset());
}

Tensor squeeze(const Tensor& t) {
  Shape sizes, strides;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (t.sizes()[i] != 1) {
      sizes.push_back(t.sizes()[i]);
      strides.push_back(t.strides()[i]);
    }
  }
  return as_strided(t, sizes, strides, t.storage_offset());
}

Tensor squeeze(const Tensor& t, int64_t dim) {
  if (t.dim() == 0) return alias(t);
  dim = wrap_dim(dim, t.dim(), "squeeze");
  if (t.sizes()[dim] != 1) return alias(t);
  Shape sizes = t.sizes(), strides = t.strides();
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return as_strided(t, sizes, strides, t.storage_offset());
}

Tensor unsqueeze(const Tensor& t, int64_t dim) {
  dim = wrap_dim(dim, t.dim() + 1, "unsqueeze");
  Shape sizes = t.sizes(), strides = t.strides();
  int64_t stride = dim < t.dim() ? sizes[dim] * strides[dim] : 1;
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return as_strided(t, sizes, strides, t.storage_offset());
}

Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  if (t.dim() == 0) return reshape(t, {1});
  start_dim = wrap_dim(start_dim, t.dim(), "flatten");
  end_dim = wrap_dim(end_dim, t.dim(), "flatten");
  SYNCGRAD_CHECK(start_dim <= end_dim, ValueError, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape sizes(t.sizes().begin(), t.sizes().begin() + start_dim);
  int64_t merged = 1;
  for (int64_t i = start_dim; i <= end_dim; ++i) merged *= t.sizes()[i];
  sizes.push_back(merged);
  sizes.insert(sizes.end(), t.sizes().begin() + end_dim + 1, t.sizes().end());
  return reshape(t, sizes);
}

}  // namespace raw
}  // namespace syncgrad
