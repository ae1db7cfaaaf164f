// Readable printing of tensors, PyTorch-like: nested brackets, shared precision, at most 6 values per
// dimension shown with "..." between the first and last three.
#include <iomanip>
#include <sstream>

#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {
namespace {

constexpr int64_t kEdge = 3;

void print_values(std::ostream& os, const std::vector<double>& values, const Shape& shape, const Shape& strides,
                  size_t dim, int64_t offset, int indent, bool floating) {
  if (shape.empty()) {
    if (floating) os << std::setprecision(4) << std::fixed << values[offset];
    else os << static_cast<int64_t>(values[offset]);
    return;
  }
  os << '[';
  int64_t n = shape[dim];
  bool elide = n > 2 * kEdge;
  for (int64_t i = 0; i < n; ++i) {
    if (elide && i == kEdge) {
      os << (dim + 1 == shape.size() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
      i = n - kEdge;
    }
    int64_t off = offset + i * strides[dim];
    if (dim + 1 == shape.size()) {
      if (floating) os << std::setprecision(4) << std::fixed << std::setw(8) << values[off];
      else os << values[off];
    } else {
      print_values(os, values, shape, strides, dim + 1, off, indent + 1, floating);
    }
    if (i + 1 < n) os << (dim + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  os << ']';
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  std::vector<double> values = to_vector<double>(*this);
  os << "tensor(";
  print_values(os, values, sizes(), contiguous_strides(sizes()), 0, 0, 7, is_floating(dtype()));
  os << ", shape=" << shape_str(sizes()) << ", dtype=" << dtype_name(dtype());
  if (!device().is_cpu()) os << ", device=" << device().str();
  if (requires_grad()) os << ", requires_grad=true";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace syncgrad
