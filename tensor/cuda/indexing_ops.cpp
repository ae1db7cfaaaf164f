// Host glue of the CUDA indexing kernels (indexing.cu): index checks before anything is written (one wait
// for the device per op, to raise the IndexError the CPU raises), launches over the lines the front-end built
// (kernels::IndexLines in tensor/ops/indexing.h), and registration into kernels::embedding, embedding_backward,
// index_select, index_add, gather, scatter_add.
#include <functional>
#include <limits>
#include <string>

#include "tensor/cuda/indexing_kernels.h"
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/embedding.h"
#include "tensor/ops/indexing.h"
#include "tensor/ops/views.h"

namespace syncgrad::cuda {
namespace {

// Throws IndexError(message(value, position)) for the first index (in row-major order) outside [0, size).
void check_range(const char* op, const Tensor& index, int64_t size,
                 const std::function<std::string(int64_t value, int64_t position)>& message) {
  if (index.numel() == 0) return;
  const Tensor flat = raw::reshape(raw::contiguous(index), {index.numel()});
  const Tensor first_bad = device_int64(index.device(), {std::numeric_limits<int64_t>::max()});
  on_device(op, index.device(), [&](cudaStream_t stream) {
    launch_check_indices(flat.dtype(), flat.data_ptr(), flat.numel(), size, first_bad.data_ptr<int64_t>(), stream);
  });
  const int64_t position = read_int64(first_bad)[0];
  if (position == std::numeric_limits<int64_t>::max()) return;
  const int64_t value = read_int64(raw::to(raw::narrow(flat, 0, position, 1), DType::i64))[0];
  throw IndexError(message(value, position));
}

void check_dim_range(const char* op, const Tensor& index, int64_t dim, int64_t size) {
  check_range(op, index, size, [&](int64_t value, int64_t) {
    return std::string(op) + ": index " + std::to_string(value) + " is out of range for dimension " +
           std::to_string(dim) + " with size " + std::to_string(size) + " (indices must be in [0, " +
           std::to_string(size) + "))";
  });
}

// out[p] = base[p] moved index[p] * step elements, over out's shape.
void gather_lines(const char* op, const Tensor& out, const Tensor& base, const Tensor& index, int64_t step) {
  for_each_piece<3>(op, {&out, &base, &index},
                    [&](const std::array<char*, 3>& p, const Geometry<3>& g, cudaStream_t s) {
                      launch_gather_lines(out.dtype(), index.dtype(), p[0], p[1], p[2], step, g, s);
                    });
}

// base[p] moved index[p] * step elements += src[p], over src's shape.
void scatter_add_lines(const char* op, const Tensor& base, const Tensor& src, const Tensor& index, int64_t step) {
  for_each_piece<3>(op, {&base, &src, &index},
                    [&](const std::array<char*, 3>& p, const Geometry<3>& g, cudaStream_t s) {
                      launch_scatter_add_lines(base.dtype(), index.dtype(), p[0], p[1], p[2], step, g, s);
                    });
}

void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  require_index("embedding", indices.dtype());
  const int64_t num = weight.sizes()[0], dim = weight.sizes()[1];
  check_range("embedding", indices, num, [&](int64_t value, int64_t position) {
    return "embedding: index " + std::to_string(value) + " (at position " + std::to_string(position) +
           ") is out of range for num_embeddings " + std::to_string(num) + "; indices must be in [0, " +
           std::to_string(num) + ")";
  });
  on_device("embedding", weight.device(), [&](cudaStream_t stream) {
    launch_embedding(weight.dtype(), out.data_ptr(), weight.data_ptr(), indices.dtype(), indices.data_ptr(),
                     indices.numel(), dim, stream);
  });
}

void embedding_backward_kernel(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& indices,
                               int64_t padding_idx) {
  require_index("embedding_backward", indices.dtype());
  require_floating("embedding_backward", grad_weight.dtype());
  on_device("embedding_backward", grad_weight.device(), [&](cudaStream_t stream) {
    launch_embedding_backward(grad_weight.dtype(), grad_weight.data_ptr(), grad_out.data_ptr(), indices.dtype(),
                              indices.data_ptr(), indices.numel(), grad_weight.sizes()[1], padding_idx, stream);
  });
}

// index_select and gather.
void gather_kernel(const Tensor& out, const kernels::IndexLines& lines) {
  check_dim_range(lines.op, lines.index, lines.dim, lines.size());
  gather_lines(lines.op, out, lines.base, lines.line_index, lines.step());
}

// index_add_ and scatter_add_.
void scatter_add_kernel(const kernels::IndexLines& lines, const Tensor& src) {
  check_dim_range(lines.op, lines.index, lines.dim, lines.size());
  scatter_add_lines(lines.op, lines.base, src, lines.line_index, lines.step());
}

}  // namespace

void register_indexing_kernels() {
  kernels::embedding.set(DeviceType::kCUDA, &embedding_kernel);
  kernels::embedding_backward.set(DeviceType::kCUDA, &embedding_backward_kernel);
  kernels::index_select.set(DeviceType::kCUDA, &gather_kernel);
  kernels::index_add.set(DeviceType::kCUDA, &scatter_add_kernel);
  kernels::gather.set(DeviceType::kCUDA, &gather_kernel);
  kernels::scatter_add.set(DeviceType::kCUDA, &scatter_add_kernel);
}

}  // namespace syncgrad::cuda
