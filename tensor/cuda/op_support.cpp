// Helpers of the CUDA kernels' host glue: dtype checks and small device <-> host transfers.
#include "tensor/cuda/op_support.h"

#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::cuda {

void unsupported_dtype(const char* op, DType dtype, const char* allowed) {
  throw DTypeError(std::string(op) + ": dtype " + dtype_name(dtype) + " is not supported (supported: " + allowed + ")");
}

void require_floating(const char* op, DType dtype) {
  if (!is_floating(dtype)) unsupported_dtype(op, dtype, "float32, float64, float16, bfloat16");
}

void require_numeric(const char* op, DType dtype) {
  if (dtype == DType::boolean) unsupported_dtype(op, dtype, "all numeric dtypes (not bool)");
}

void require_index(const char* op, DType dtype) {
  if (dtype != DType::i64 && dtype != DType::i32) unsupported_dtype(op, dtype, "int64, int32 (index tensors)");
}

std::vector<int64_t> read_int64(const Tensor& t) { return to_vector<int64_t>(t); }

// Filled on the device (one small fill per value) rather than copied from the host, which would wait.
Tensor device_int64(Device device, const std::vector<int64_t>& values) {
  Tensor t = empty({static_cast<int64_t>(values.size())}, {.dtype = DType::i64, .device = device});
  for (size_t i = 0; i < values.size(); ++i) raw::fill_(raw::narrow(t, 0, static_cast<int64_t>(i), 1), values[i]);
  return t;
}

}  // namespace syncgrad::cuda
