// Raw loss front-ends: shape and dtype checks, the (N, C, S) layout of class-dim inputs, target range errors,
// reductions (mean over non-ignored targets) and the per-position gradient weights of the backward.
#include "tensor/ops/loss.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<TargetScan(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t, double)>
    cross_entropy("cross_entropy");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t,
                          double)>
    cross_entropy_backward("cross_entropy backward");
constinit KernelSlot<TargetScan(const Tensor&, const Tensor&, const Tensor&, int64_t)> nll_loss("nll_loss");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, int64_t)> nll_loss_backward(
    "nll_loss backward");
constinit KernelSlot<TargetScan(const Tensor&, const Tensor&)> one_hot("one_hot");
}  // namespace kernels

const char* reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::none: return "none";
    case Reduction::mean: return "mean";
    case Reduction::sum: return "sum";
  }
  return "?";
}

namespace raw {
namespace {

// A class-dim input (N, C, d1, ...) seen as (N, C, S) with targets (N, S), S = d1 * ...
struct ClassLayout {
  int64_t n = 1, c = 1, s = 1;
  Shape target_shape;
};

// The layout of a class-dim input of `shape`: (N, C, d1, ...), or (C) with a 0-dim target.
ClassLayout class_layout(const Shape& shape) {
  ClassLayout l;
  if (shape.size() == 1) {
    l.c = shape[0];
    return l;
  }
  l.n = shape[0];
  l.c = shape[1];
  l.target_shape.push_back(l.n);
  for (size_t d = 2; d < shape.size(); ++d) {
    l.target_shape.push_back(shape[d]);
    l.s *= shape[d];
  }
  return l;
}

ClassLayout checked_class_layout(const Tensor& input, const Tensor& target, const char* op, const char* input_name) {
  check_same_device(op, input, target);
  SYNCGRAD_CHECK(is_floating(input.dtype()), DTypeError, op, ": ", input_name, " must be floating, got ",
                 dtype_name(input.dtype()));
  SYNCGRAD_CHECK(target.dtype() == DType::i64, DTypeError, op, ": targets must be int64 class indices, got ",
                 dtype_name(target.dtype()), "; convert with .to(DType::i64)");
  const bool has_classes = input.dim() > 1 ? input.sizes()[1] != 0 : input.dim() == 1 && input.numel() != 0;
  SYNCGRAD_CHECK(has_classes, ShapeError, op, ": ", input_name,
                 " must be (N, C), (N, C, d1, ...) or (C) with C >= 1 classes, got shape ", shape_str(input.sizes()));
  ClassLayout l = class_layout(input.sizes());
  SYNCGRAD_CHECK(target.sizes() == l.target_shape, ShapeError, op, ": target shape ", shape_str(target.sizes()),
                 " does not match ", input_name, " shape ", shape_str(input.sizes()), " (expected target shape ",
                 shape_str(l.target_shape), ": the ", input_name, " shape without the class dim 1)");
  return l;
}

std::string position_str(int64_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_str(index);
}

void check_targets(const TargetScan& scan, const ClassLayout& l, int64_t ignore_index, const char* op) {
  if (scan.invalid_position < 0) return;
  throw IndexError(std::string(op) + ": target " + std::to_string(scan.invalid_value) + " at position " +
                   position_str(scan.invalid_position, l.target_shape) + " is out of range for " +
                   std::to_string(l.c) + " classes (expected a class index in [0, " + std::to_string(l.c) +
                   ") or ignore_index " + std::to_string(ignore_index) + ")");
}

DType loss_dtype(DType input) { return input == DType::f64 ? DType::f64 : DType::f32; }

// Per-position losses (N, S) in loss_dtype -> the reduced loss in `out_dtype`.
Tensor reduce_losses(const Tensor& losses, int64_t valid, Reduction reduction, DType out_dtype,
                     const Shape& target_shape) {
  switch (reduction) {
    case Reduction::none: return to(reshape(losses, target_shape), out_dtype);
    case Reduction::sum: return to(sum(losses), out_dtype);
    case Reduction::mean: break;
  }
  // No valid target: 0 / 0 = NaN, as in PyTorch.
  Tensor count = scalar_tensor(static_cast<double>(valid), losses.dtype(), losses.device());
  return to(div(sum(losses), count), out_dtype);
}

// The gradient of each position's loss, (N, S) contiguous in `dtype`, from the gradient of the reduced loss.
Tensor position_weights(const Tensor& grad, int64_t valid, Reduction reduction, DType dtype, const ClassLayout& l) {
  Tensor g = to(grad, dtype);
  if (reduction == Reduction::none) return contiguous(reshape(g, {l.n, l.s}));
  if (reduction == Reduction::mean) g = div(g, scalar_tensor(static_cast<double>(valid), dtype, g.device()));
  return contiguous(expand(reshape(g, {1, 1}), {l.n, l.s}));
}

}  // namespace

CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& target,
                                         const CrossEntropyOptions& options) {
  ClassLayout l = checked_class_layout(logits, target, "cross_entropy", "logits");
  SYNCGRAD_CHECK(options.label_smoothing >= 0.0 && options.label_smoothing < 1.0, ValueError,
                 "cross_entropy: label_smoothing must be in [0, 1), got ", std::to_string(options.label_smoothing));
  TensorOptions acc{.dtype = loss_dtype(logits.dtype()), .device = logits.device()};
  Tensor losses = empty({l.n, l.s}, acc);
  CrossEntropyResult result;
  result.lse = empty({l.n, l.s}, acc);
  TargetScan scan = kernels::cross_entropy(logits.device(), losses, result.lse,
                                           reshape(contiguous(logits), {l.n, l.c, l.s}),
                                           reshape(contiguous(target), {l.n, l.s}), options.ignore_index,
                                           options.label_smoothing);
  check_targets(scan, l, options.ignore_index, "cross_entropy");
  result.valid = scan.valid;
  result.loss = reduce_losses(losses, scan.valid, options.reduction, logits.dtype(), l.target_shape);
  return result;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options) {
  return cross_entropy_forward(logits, target, options).loss;
}

Tensor cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& target,
                              const CrossEntropyResult& forward, const CrossEntropyOptions& options) {
  ClassLayout l = class_layout(logits.sizes());
  Tensor weights = position_weights(grad, forward.valid, options.reduction, forward.lse.dtype(), l);
  Tensor grad_logits = empty({l.n, l.c, l.s}, {.dtype = logits.dtype(), .device = logits.device()});
  kernels::cross_entropy_backward(logits.device(), grad_logits, reshape(contiguous(logits), {l.n, l.c, l.s}),
                                  forward.lse, reshape(contiguous(target), {l.n, l.s}), weights,
                                  options.ignore_index, options.label_smoothing);
  return view(grad_logits, logits.sizes());
}

NLLLossResult nll_loss_forward(const Tensor& log_probs, const Tensor& target, const NLLLossOptions& options) {
  ClassLayout l = checked_class_layout(log_probs, target, "nll_loss", "log_probs");
  Tensor losses = empty({l.n, l.s}, {.dtype = loss_dtype(log_probs.dtype()), .device = log_probs.device()});
  TargetScan scan = kernels::nll_loss(log_probs.device(), losses, reshape(contiguous(log_probs), {l.n, l.c, l.s}),
                                      reshape(contiguous(target), {l.n, l.s}), options.ignore_index);
  check_targets(scan, l, options.ignore_index, "nll_loss");
  return {reduce_losses(losses, scan.valid, options.reduction, log_probs.dtype(), l.target_shape), scan.valid};
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossOptions& options) {
  return nll_loss_forward(log_probs, target, options).loss;
}

Tensor nll_loss_backward(const Tensor& grad, const Shape& log_probs_shape, const Tensor& target,
                         const NLLLossResult& forward, const NLLLossOptions& options) {
  ClassLayout l = class_layout(log_probs_shape);
  Tensor weights = position_weights(grad, forward.valid, options.reduction, grad.dtype(), l);
  Tensor grad_in = zeros({l.n, l.c, l.s}, {.dtype = grad.dtype(), .device = grad.device()});
  kernels::nll_loss_backward(grad.device(), grad_in, weights, reshape(contiguous(target), {l.n, l.s}),
                             options.ignore_index);
  return view(grad_in, log_probs_shape);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_same_device("mse_loss", input, target);
  SYNCGRAD_CHECK(input.sizes() == target.sizes(), ShapeError, "mse_loss: input shape ", shape_str(input.sizes()),
                 " and target shape ", shape_str(target.sizes()),
                 " differ; reshape one of them (broadcasting here is usually a bug)");
  SYNCGRAD_CHECK(is_floating(input.dtype()) && is_floating(target.dtype()), DTypeError,
                 "mse_loss: input and target must be floating, got ", dtype_name(input.dtype()), " and ",
                 dtype_name(target.dtype()));
  Tensor diff = sub(input, target);
  Tensor squares = mul(diff, diff);
  switch (reduction) {
    case Reduction::none: return squares;
    case Reduction::sum: return sum(squares);
    case Reduction::mean: break;
  }
  return mean(squares);
}

Tensor mse_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, Reduction reduction) {
  // d/d input of (input - target)^2 is 2 (input - target); the mean divides by the element count.
  double scale = reduction == Reduction::mean ? 2.0 / static_cast<double>(input.numel()) : 2.0;
  return mul(mul(sub(input, target), scale), to(grad, input.dtype()));
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  SYNCGRAD_CHECK(indices.dtype() == DType::i64, DTypeError, "one_hot: indices must be int64, got ",
                 dtype_name(indices.dtype()), "; convert with .to(DType::i64)");
  SYNCGRAD_CHECK(num_classes >= -1, ValueError, "one_hot: num_classes must be -1 (infer) or >= 0, got ", num_classes);
  if (num_classes == -1) {
    SYNCGRAD_CHECK(indices.numel() != 0, ValueError, "one_hot: cannot infer num_classes from an empty tensor of shape ",
                   shape_str(indices.sizes()), "; pass num_classes");
    num_classes = std::max<int64_t>(max(indices).item<int64_t>() + 1, 0);
  }
  Shape shape = indices.sizes();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, {.dtype = DType::i64, .device = indices.device()});
  if (indices.numel() == 0) return out;
  TargetScan scan = kernels::one_hot(indices.device(), out, contiguous(indices));
  SYNCGRAD_CHECK(scan.invalid_position < 0, IndexError, "one_hot: index ", scan.invalid_value, " at position ",
                 position_str(scan.invalid_position, indices.sizes()), " is out of range for num_classes ", num_classes,
                 " (expected [0, ", num_classes, "))");
  return out;
}

}  // namespace raw
}  // namespace syncgrad
