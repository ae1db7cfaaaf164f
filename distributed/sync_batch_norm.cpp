// sync_batch_norm: forward with one allreduce of [sum, sum of squares, count] per channel, and its autograd
// node, whose backward allreduces [sum(dy), sum(dy * (x - mean))]; SyncBatchNorm and convert_sync_batchnorm.
#include "distributed/sync_batch_norm.h"

#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/node.h"
#include "distributed/collective_caller.h"
#include "distributed/init.h"
#include "nn/checkpoint.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/join.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/unary.h"
#include "tensor/ops/views.h"

namespace syncgrad::distributed {

namespace {

DType compute_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

// (N, C, *) -> (N, C, S) in the compute dtype.
Tensor as_ncs(const Tensor& x) {
  return raw::to(raw::reshape(raw::contiguous(x), {x.size(0), x.size(1), -1}), compute_dtype(x.dtype()));
}

// (C) -> (1, C, 1) for broadcasting against (N, C, S).
Tensor per_channel(const Tensor& v) { return raw::view(v, {1, v.size(0), 1}); }

// Sums a list of (C) vectors over ranks with one allreduce; returns them in the same order.
std::vector<Tensor> allreduce_vectors(ProcessGroup& group, const std::vector<Tensor>& vectors) {
  Tensor packed = raw::cat(vectors, 0);
  group.allreduce(packed, ReduceOp::kSum)->wait();
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (const Tensor& v : vectors) {
    out.push_back(raw::narrow(packed, 0, offset, v.numel()));
    offset += v.numel();
  }
  return out;
}

// What the backward keeps: the input as (N, C, S), the batch statistics (C) and the weight (C) as saved
// tensors (released with the node), the global element count per channel and the group.
struct SyncBatchNormSaved {
  autograd::SavedTensor x, mean, invstd, weight;
  double total;
  std::shared_ptr<ProcessGroup> group;
  DType input_dtype;
  Shape input_shape;
};

autograd::GradList sync_batch_norm_backward(const SyncBatchNormSaved& saved, const autograd::Node& node,
                                            autograd::GradList&& grads) {
  const Tensor x = saved.x.get(node);
  const Tensor mean = saved.mean.get(node), invstd = saved.invstd.get(node);
  const Tensor weight = saved.weight.defined() ? saved.weight.get(node) : Tensor();
  Tensor dy = grads[0].defined() ? as_ncs(grads[0]) : zeros_like(x);
  const Tensor xmu = raw::sub(x, per_channel(mean));
  const Tensor sum_dy = raw::sum(dy, {0, 2});
  const Tensor sum_dy_xmu = raw::sum(raw::mul(dy, xmu), {0, 2});
  // The parameters' gradients are this rank's (DDP averages them); the input's needs the global sums.
  autograd::GradList out(3);
  if (weight.defined()) {
    out[1] = raw::to(raw::mul(sum_dy_xmu, invstd), weight.dtype());
    out[2] = raw::to(sum_dy, weight.dtype());
  }
  const CollectiveCaller caller("SyncBatchNorm backward");
  const auto global = allreduce_vectors(*saved.group, {sum_dy, sum_dy_xmu});
  const Tensor mean_dy = raw::div(global[0], Scalar(saved.total));
  const Tensor mean_dy_xmu = raw::div(global[1], Scalar(saved.total));
  Tensor scale = weight.defined() ? raw::mul(invstd, raw::to(weight, invstd.dtype())) : invstd;
  Tensor dx = raw::sub(raw::sub(dy, per_channel(mean_dy)),
                       raw::mul(xmu, per_channel(raw::mul(raw::mul(invstd, invstd), mean_dy_xmu))));
  dx = raw::mul(dx, per_channel(scale));
  out[0] = raw::to(raw::reshape(dx, saved.input_shape), saved.input_dtype);
  return out;
}

class GroupBatchStatsSync : public nn::BatchStatsSync {
 public:
  explicit GroupBatchStatsSync(std::shared_ptr<ProcessGroup> group) : group_(std::move(group)) {}
  Tensor forward(nn::BatchNorm& layer, const Tensor& input, double momentum_factor) override {
    const bool recomputing = nn::in_checkpoint_recompute();  // the forward already updated the statistics
    return sync_batch_norm(input, recomputing ? Tensor() : layer.running_mean,
                           recomputing ? Tensor() : layer.running_var, layer.weight, layer.bias, momentum_factor,
                           layer.eps, group_ ? group_ : default_group_ptr());
  }

 private:
  std::shared_ptr<ProcessGroup> group_;
};

void convert_tree(nn::Module& module, const std::shared_ptr<nn::BatchStatsSync>& sync, int& count) {
  if (auto* bn = dynamic_cast<nn::BatchNorm*>(&module)) {
    bn->set_stats_sync(sync);
    ++count;
  }
  for (const auto& [name, child] : module.named_children()) convert_tree(*child, sync, count);
}

}  // namespace

Tensor sync_batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum_factor, double eps,
                       const std::shared_ptr<ProcessGroup>& group) {
  SYNCGRAD_CHECK(input.dim() >= 2, ShapeError, "sync_batch_norm: input must be (N, C, *), got ",
                 shape_str(input.sizes()));
  Tensor x = as_ncs(input);  // (N, C, S)
  const DType cdt = x.dtype();
  const double local_count = static_cast<double>(x.size(0) * x.size(2));
  const CollectiveCaller caller("SyncBatchNorm forward");
  const auto global = allreduce_vectors(
      *group, {raw::sum(x, {0, 2}), raw::sum(raw::mul(x, x), {0, 2}), full({1}, Scalar(local_count), {.dtype = cdt})});
  const double total = global[2].to(DType::f64).item<double>();
  SYNCGRAD_CHECK(total >= 2, ValueError, "sync_batch_norm: expected more than 1 value per channel over all ranks, got ",
                 static_cast<int64_t>(total), " (input ", shape_str(input.sizes()), ")");
  const Tensor mean = raw::div(global[0], Scalar(total));
  const Tensor var = raw::clamp(raw::sub(raw::div(global[1], Scalar(total)), raw::mul(mean, mean)), Scalar(0.0), {});
  const Tensor invstd = raw::rsqrt(raw::add(var, Scalar(eps)));
  if (running_mean.defined()) {
    NoGradGuard no_grad;
    const double m = momentum_factor;
    raw::copy_(running_mean, raw::add(raw::mul(running_mean, Scalar(1 - m)),
                                      raw::mul(raw::to(mean, running_mean.dtype()), Scalar(m))));
    const Tensor unbiased = raw::mul(var, Scalar(total / (total - 1)));
    raw::copy_(running_var, raw::add(raw::mul(running_var, Scalar(1 - m)),
                                     raw::mul(raw::to(unbiased, running_var.dtype()), Scalar(m))));
  }
  Tensor y = raw::mul(raw::sub(x, per_channel(mean)), per_channel(invstd));
  if (weight.defined()) y = raw::mul(y, per_channel(raw::to(weight, cdt)));
  if (bias.defined()) y = raw::add(y, per_channel(raw::to(bias, cdt)));
  y = raw::to(raw::reshape(y, input.sizes()), input.dtype());

  if (!autograd::any_requires_grad({&input, &weight, &bias})) return y;
  autograd::record<"SyncBatchNormBackward">(
      {&input, &weight, &bias}, {&y},
      [saved = SyncBatchNormSaved{x, mean, invstd, weight, total, group, input.dtype(), input.sizes()}](
          const autograd::Node& node, autograd::GradList&& grads) {
        return sync_batch_norm_backward(saved, node, std::move(grads));
      });
  return y;
}

SyncBatchNorm::SyncBatchNorm(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                             bool track_running_stats, std::shared_ptr<ProcessGroup> group)
    : nn::BatchNorm("SyncBatchNorm", {2, 3, 4, 5}, num_features, eps, momentum, affine, track_running_stats) {
  set_stats_sync(make_batch_stats_sync(std::move(group)));
}

std::shared_ptr<nn::BatchStatsSync> make_batch_stats_sync(std::shared_ptr<ProcessGroup> group) {
  return std::make_shared<GroupBatchStatsSync>(std::move(group));
}

int convert_sync_batchnorm(nn::Module& model, std::shared_ptr<ProcessGroup> group) {
  int count = 0;
  convert_tree(model, make_batch_stats_sync(std::move(group)), count);
  return count;
}

}  // namespace syncgrad::distributed
