// How a strided (rows, cols) matrix is handed to a GEMM without copying: row-major, or column-major (the
// transpose of a row-major matrix), with its leading dimension. Shared by the CPU and CUDA GEMM kernels.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace syncgrad {

struct MatrixLayout {
  bool valid = false;     // false: neither layout fits (the matrix must be made contiguous first)
  bool row_major = true;  // false: column-major
  int64_t ld = 1;         // elements between consecutive rows (row-major) or columns (column-major)
};

// Strides of size-1 dimensions do not matter; a leading dimension must cover a whole row (column). A matrix
// that is both (one row) is reported row-major.
inline MatrixLayout layout_of(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= cols)) {
    return {true, true, rows == 1 ? cols : row_stride};
  }
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= rows)) {
    return {true, false, cols == 1 ? rows : col_stride};
  }
  return {};
}

// The layout of the last two dimensions of t (..., rows, cols).
inline MatrixLayout layout_of(const Tensor& t) {
  return layout_of(t.size(-2), t.size(-1), t.stride(-2), t.stride(-1));
}

}  // namespace syncgrad
