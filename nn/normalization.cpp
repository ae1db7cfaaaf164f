// BatchNorm and LayerNorm layers: parameters and buffers with PyTorch's initial values; forward through the
// differentiable norm ops, with num_batches_tracked kept here.
#include "nn/normalization.h"

#include <algorithm>
#include <sstream>

#include "autograd/grad_mode.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/norm.h"
#include "nn/checkpoint.h"
#include "tensor/check.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::nn {

namespace {
const char* bool_str(bool b) { return b ? "True" : "False"; }
}  // namespace

BatchNorm::BatchNorm(std::string type_name, std::vector<int64_t> accepted_ranks, int64_t num_features, double eps,
                     std::optional<double> momentum, bool affine, bool track_running_stats)
    : Module(std::move(type_name)), num_features(num_features), eps(eps), momentum(momentum), affine(affine),
      track_running_stats(track_running_stats), accepted_ranks_(std::move(accepted_ranks)) {
  SYNCGRAD_CHECK(num_features > 0, ValueError, this->type_name(), ": num_features must be positive, got ",
                 num_features);
  if (affine) {
    weight = register_parameter("weight", ones({num_features}));
    bias = register_parameter("bias", zeros({num_features}));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features}));
    running_var = register_buffer("running_var", ones({num_features}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, {.dtype = DType::i64}));
  }
}

BatchNorm::Plan BatchNorm::prepare(const Tensor& input) {
  if (std::find(accepted_ranks_.begin(), accepted_ranks_.end(), input.dim()) == accepted_ranks_.end()) {
    std::string ranks;
    for (int64_t r : accepted_ranks_) ranks += (ranks.empty() ? "" : " or ") + std::to_string(r) + "-D";
    throw ShapeError(type_name() + ".forward: expected " + ranks + " input, got shape " + shape_str(input.sizes()));
  }
  SYNCGRAD_CHECK(input.size(1) == num_features, ShapeError, type_name(), ".forward: input of shape ",
                 shape_str(input.sizes()), " has ", input.size(1), " channels (dim 1), the layer was built for ",
                 num_features);
  Plan plan{is_training() || !track_running_stats, momentum.value_or(0.0), false};
  // A checkpoint's recomputation (nn/checkpoint.h) normalises with the batch statistics again but leaves the
  // running statistics alone: the forward already counted this batch.
  plan.recomputing = is_training() && in_checkpoint_recompute();
  if (is_training() && track_running_stats && !plan.recomputing) {
    NoGradGuard no_grad;
    raw::add_(num_batches_tracked, 1);
    if (!momentum) plan.factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  return plan;
}

Tensor BatchNorm::forward(const Tensor& input) {
  const Plan plan = prepare(input);
  if (is_training() && stats_sync_) return stats_sync_->forward(*this, input, plan.factor);
  return batch_norm(input, plan.recomputing ? Tensor() : running_mean, plan.recomputing ? Tensor() : running_var,
                    weight, bias, plan.use_batch_stats, plan.factor, eps);
}

Tensor BatchNorm::forward_relu(const Tensor& input, const Tensor& residual) {
  // The fused op refuses a residual of another shape; the three ops would broadcast one.
  SYNCGRAD_CHECK(!residual.defined() || residual.sizes() == input.sizes(), ShapeError, type_name(),
                 ".forward_relu: residual of shape ", shape_str(residual.sizes()), " for input of shape ",
                 shape_str(input.sizes()), "; the residual is added elementwise, so the shapes must match");
  if (is_training() && stats_sync_) {
    const Tensor normalised = forward(input);
    return relu(residual.defined() ? add(normalised, residual) : normalised);
  }
  const Plan plan = prepare(input);
  return batch_norm_relu(input, plan.recomputing ? Tensor() : running_mean,
                         plan.recomputing ? Tensor() : running_var, weight, bias, plan.use_batch_stats, plan.factor,
                         eps, residual);
}

std::string BatchNorm::extra_repr() const {
  std::ostringstream out;
  out << num_features << ", eps=" << eps << ", momentum=";
  if (momentum) out << *momentum;
  else out << "None";
  out << ", affine=" << bool_str(affine) << ", track_running_stats=" << bool_str(track_running_stats);
  return out.str();
}

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine, bool bias)
    : Module("LayerNorm"), normalized_shape(std::move(normalized_shape)), eps(eps),
      elementwise_affine(elementwise_affine) {
  if (elementwise_affine) {
    weight = register_parameter("weight", ones(this->normalized_shape));
    if (bias) this->bias = register_parameter("bias", zeros(this->normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& input) { return layer_norm(input, normalized_shape, weight, bias, eps); }

std::string LayerNorm::extra_repr() const {
  std::string shape;
  for (int64_t s : normalized_shape) shape += (shape.empty() ? "" : ", ") + std::to_string(s);
  if (normalized_shape.size() == 1) shape += ",";
  std::ostringstream out;
  out << "(" << shape << "), eps=" << eps << ", elementwise_affine=" << bool_str(elementwise_affine);
  if (elementwise_affine && !bias.defined()) out << ", bias=False";
  return out.str();
}

}  // namespace syncgrad::nn
