// Raw cat/stack/split/chunk: shape planning and checks; the data moves through raw::copy_ into narrow views
// of the output (for contiguous inputs along dim 0 the copy kernel merges every dim: one memcpy per input).
#include "tensor/ops/join.h"

#include <algorithm>
#include <numeric>

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace {

// PyTorch's legacy rule: a 1-D tensor with no elements may join tensors of any rank (it is left out).
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

}  // namespace

CatPlan plan_cat(const std::vector<Tensor>& tensors, int64_t dim, const char* op) {
  SYNCGRAD_CHECK(!tensors.empty(), ValueError, op, ": expected a non-empty list of tensors");
  CatPlan plan;
  plan.dtype = tensors[0].dtype();
  plan.skipped.assign(tensors.size(), false);
  int64_t ref = -1;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_same_device(op, tensors[0], t);
    SYNCGRAD_CHECK(t.dim() != 0, ShapeError, op, ": tensor ", i,
                   " is 0-d and cannot be concatenated; unsqueeze it first or use stack");
    plan.dtype = promote_types(plan.dtype, t.dtype());
    plan.skipped[i] = is_legacy_empty(t);
    if (ref < 0 && !plan.skipped[i]) ref = static_cast<int64_t>(i);
  }
  if (ref < 0) {
    // Every input is an empty 1-D tensor: so is the result.
    plan.dim = wrap_dim(dim, 1, op);
    plan.shape = {0};
    return plan;
  }
  const Tensor& first = tensors[ref];
  plan.dim = wrap_dim(dim, first.dim(), op);
  plan.shape = first.sizes();
  plan.shape[plan.dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (plan.skipped[i]) continue;
    const Tensor& t = tensors[i];
    SYNCGRAD_CHECK(t.dim() == first.dim(), ShapeError, op, ": tensor ", i, " has ", t.dim(), " dims (shape ",
                   shape_str(t.sizes()), ") but tensor ", ref, " has ", first.dim(), " (shape ",
                   shape_str(first.sizes()), "); all tensors need the same number of dims");
    for (int64_t k = 0; k < t.dim(); ++k) {
      SYNCGRAD_CHECK(k == plan.dim || t.sizes()[k] == first.sizes()[k], ShapeError, op,
                     ": sizes must match except in dimension ", plan.dim, ", but tensor ", i, " has shape ",
                     shape_str(t.sizes()), " and tensor ", ref, " has shape ", shape_str(first.sizes()),
                     " (dimension ", k, ": ", t.sizes()[k], " vs ", first.sizes()[k], ")");
    }
    plan.shape[plan.dim] += t.sizes()[plan.dim];
  }
  return plan;
}

namespace raw {

namespace {

// The wrapped dim for split/chunk of `t` (which must have at least 1 dim).
int64_t split_dim(const Tensor& t, int64_t dim, const char* op) {
  SYNCGRAD_CHECK(t.dim() != 0, ShapeError, op, ": expects a tensor with at least 1 dimension, got a 0-d tensor");
  return wrap_dim(dim, t.dim(), op);
}

// Lengths along `dim` of the pieces that split / chunk produce (dim already valid for t).
Shape split_lengths(const Tensor& t, int64_t split_size, int64_t dim) {
  int64_t size = t.sizes()[dim];
  SYNCGRAD_CHECK(split_size >= 0 && !(split_size == 0 && size > 0), ValueError,
                 "split: split_size must be positive (0 only for an empty dimension), got ", split_size,
                 " for dimension ", dim, " of size ", size);
  if (size == 0) return {0};
  Shape lengths;
  for (int64_t start = 0; start < size; start += split_size) lengths.push_back(std::min(split_size, size - start));
  return lengths;
}

Shape chunk_lengths(const Tensor& t, int64_t chunks, int64_t dim) {
  SYNCGRAD_CHECK(chunks > 0, ValueError, "chunk: the number of chunks must be positive, got ", chunks);
  int64_t size = t.sizes()[dim];
  // An empty dimension still gives `chunks` (empty) pieces.
  if (size == 0) return Shape(static_cast<size_t>(chunks), 0);
  return split_lengths(t, (size + chunks - 1) / chunks, dim);
}

// Checks that `lengths` are non-negative and add up to t's size along `dim`.
void check_split_sizes(const Tensor& t, const Shape& lengths, int64_t dim) {
  int64_t size = t.sizes()[dim];
  for (int64_t length : lengths) {
    SYNCGRAD_CHECK(length >= 0, ValueError, "split: split sizes must be non-negative, got ", shape_str(lengths));
  }
  int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  SYNCGRAD_CHECK(total == size, ValueError, "split: split sizes ", shape_str(lengths), " add up to ", total,
                 " but dimension ", dim, " has size ", size, " (shape ", shape_str(t.sizes()), ")");
}

std::vector<Tensor> narrow_pieces(const Tensor& t, const Shape& lengths, int64_t dim) {
  std::vector<Tensor> pieces;
  pieces.reserve(lengths.size());
  int64_t start = 0;
  for (int64_t length : lengths) {
    pieces.push_back(narrow(t, dim, start, length));
    start += length;
  }
  return pieces;
}

Tensor cat_named(const std::vector<Tensor>& tensors, int64_t dim, const char* op) {
  CatPlan plan = plan_cat(tensors, dim, op);
  Tensor out = empty(plan.shape, {.dtype = plan.dtype, .device = tensors[0].device()});
  int64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (plan.skipped[i]) continue;
    int64_t length = tensors[i].sizes()[plan.dim];
    if (length > 0) copy_(narrow(out, plan.dim, offset, length), tensors[i]);
    offset += length;
  }
  return out;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) { return cat_named(tensors, dim, "cat"); }

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  SYNCGRAD_CHECK(!tensors.empty(), ValueError, "stack: expected a non-empty list of tensors");
  const Tensor& first = tensors[0];
  int64_t d = wrap_dim(dim, first.dim() + 1, "stack");
  std::vector<Tensor> unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    SYNCGRAD_CHECK(tensors[i].sizes() == first.sizes(), ShapeError, "stack: tensor ", i, " has shape ",
                   shape_str(tensors[i].sizes()), " but tensor 0 has shape ", shape_str(first.sizes()),
                   "; stack needs equal shapes");
    unsqueezed.push_back(unsqueeze(tensors[i], d));
  }
  return cat_named(unsqueezed, d, "stack");
}

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim) {
  int64_t d = split_dim(t, dim, "split");
  return narrow_pieces(t, split_lengths(t, split_size, d), d);
}

std::vector<Tensor> split(const Tensor& t, const Shape& split_sizes, int64_t dim) {
  int64_t d = split_dim(t, dim, "split");
  check_split_sizes(t, split_sizes, d);
  return narrow_pieces(t, split_sizes, d);
}

std::vector<Tensor> split(const Tensor& t, std::initializer_list<int64_t> split_sizes, int64_t dim) {
  return split(t, Shape(split_sizes), dim);
}

std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  int64_t d = split_dim(t, dim, "chunk");
  return narrow_pieces(t, chunk_lengths(t, chunks, d), d);
}

}  // namespace raw
}  // namespace syncgrad
