// ZeroRedundancyOptimizer (ZeRO stage 1, and stage 2 together with DistributedDataParallel's gradient
// sharding): each rank of a group keeps the optimizer state of its shard of the parameters only, steps that
// shard through an ordinary inner optimizer (SGD, Adam, AdamW: any elementwise one), and the updated shards are
// allgathered back into every rank's parameters. Optimizer-state memory per rank is about 1/W of a plain
// optimizer's.
//
// The shard (shard_layout.h) is a contiguous 1/W slice of each flat segment of parameters, the segments being
// DDP's initial buckets; the inner optimizer sees one flat tensor per segment. As FSDP's flat parameters, the
// model's parameters become views of one padded flat buffer per segment at construction (same tensors: DDP and
// the model keep working on them), so the inner step updates this rank's block in place and one in-place
// allgather per segment completes the parameters, with no copies. Move or convert the model before constructing
// the optimizer (a parameter re-pointed later is copied back into its slot at the next step). Use it under DDP (the gradients
// are averaged before step()):
//   auto ddp = std::make_shared<DistributedDataParallel>(model, group);
//   optim::ZeroRedundancyOptimizer opt(model->parameters(), group, [](std::vector<Tensor> shards) {
//     return std::make_unique<optim::AdamW>(std::move(shards), optim::AdamWOptions{.lr = 1e-3});
//   });
// For ZeRO-2, construct DDP with DDPOptions::gradient_sharding and call opt.use_gradient_shards(*ddp): the
// gradients are then reduce-scattered during backward and param.grad stays empty.
//
// It is an optim::Optimizer (its one param group holds the model's parameters: set_lr, zero_grad, GradScaler,
// LR schedulers work as usual); its state_dict() has the very layout of the unsharded inner optimizer, so a
// checkpoint moves between ZeRO at any world size and a plain optimizer. This file sits in distributed/ because
// it needs ProcessGroup (optim/ must not include distributed/), but declares namespace syncgrad::optim.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "distributed/process_group.h"
#include "distributed/shard_layout.h"
#include "optim/optimizer.h"

namespace syncgrad::distributed {
class DistributedDataParallel;
}

namespace syncgrad::optim {

// Builds the inner optimizer over the rank's flat shard tensors (one per segment).
using InnerOptimizerFactory = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor> shards)>;

struct ZeroOptions {
  // The segmentation: DDP's bucket caps (DDPOptions' values). ZeRO-2 needs the same values as the DDP it uses.
  double first_bucket_mb = 1;
  double bucket_cap_mb = 25;
};

class ZeroRedundancyOptimizer : public Optimizer {
 public:
  // Every rank of `group` must construct it with the same parameters (count, shapes, dtypes: checked, a
  // ValueError names the first rank that differs) on the group's device. ValueError for an empty list,
  // parameters that do not require grad (frozen ones would be stepped with zeros), non-contiguous parameters, parameters on another device than the group's, a rank outside the group, a
  // factory that returns null or an optimizer over other tensors.
  ZeroRedundancyOptimizer(std::vector<Tensor> params, std::shared_ptr<distributed::ProcessGroup> group,
                          const InnerOptimizerFactory& factory, ZeroOptions options = {});

  // Steps this rank's shard with the gradients DDP left in param.grad (ZeRO-1) or its reduce-scattered shards
  // (ZeRO-2), then allgathers the parameters. Collective: every rank calls it. Parameters without a gradient
  // take part with a zero gradient (the shard steps as a whole); no step at all when no parameter has one.
  void step() override;

  // ZeRO-2: take the gradient shards of `ddp` (constructed with gradient_sharding over these same parameters
  // and bucket caps) instead of param.grad. ValueError when its buckets are not this optimizer's segments.
  void use_gradient_shards(distributed::DistributedDataParallel& ddp);
  bool shards_gradients() const { return ddp_ != nullptr; }

  // Collective: gathers every rank's shard of the state onto `to_rank`, where state_dict() then returns it (in
  // the unsharded layout) until the next step(). PyTorch's consolidate_state_dict.
  void consolidate_state_dict(int to_rank = 0);
  // The consolidated state (on consolidate_state_dict's rank); in a group of one rank it consolidates itself.
  // ValueError otherwise, saying to consolidate first.
  OptimizerStateDict state_dict() const override;
  // Takes a state in the unsharded layout (a plain optimizer's, or a consolidated one saved at any world size)
  // and keeps this rank's shard of it. Called on every rank (no communication).
  void load_state_dict(const OptimizerStateDict& state) override;
  // This rank's shard of the state, in the inner optimizer's layout ("state.<segment>.<name>"): what a sharded
  // checkpoint saves per rank (zero_checkpoint.h).
  OptimizerStateDict local_state_dict() const { return inner_->state_dict(); }

  // Unscales the gradients this step will read and agrees with the other ranks on inf/NaN (one allreduce).
  bool unscale_gradients_(double inv_scale) override;
  // clip_grad_norm_ over the sharded gradients: the total norm comes from every rank's shard (one allreduce of
  // the partial sums, or of the maxima for the infinity norm), and every gradient the step reads is scaled.
  // Same arguments, result and errors as optim::clip_grad_norm_. Collective.
  double clip_grad_norm_(double max_norm, double norm_type = 2.0, bool error_if_nonfinite = false);

  const distributed::ShardLayout& layout() const { return layout_; }
  const ZeroOptions& zero_options() const { return options_; }
  distributed::ProcessGroup& process_group() const { return *group_; }
  Optimizer& inner() { return *inner_; }
  // Names of the state buffers the inner optimizer keeps ("exp_avg", ...), and whether it counts steps.
  std::vector<std::string> inner_buffer_names() const { return inner_->state_buffer_names(); }
  bool inner_counts_steps() const { return inner_->counts_steps(); }

 protected:
  void validate_options(const std::map<std::string, double>& options) const override;
  std::vector<std::string> state_buffer_names() const override { return inner_->state_buffer_names(); }
  std::vector<std::string> required_buffers(const std::map<std::string, double>& options) const override {
    return inner_->required_buffers(options);
  }
  bool counts_steps() const override { return inner_->counts_steps(); }

 private:
  struct Shards;
  ZeroRedundancyOptimizer(std::vector<Tensor> params, std::shared_ptr<distributed::ProcessGroup> group,
                          ZeroOptions options, Shards shards);
  static Shards make_shards(const std::vector<Tensor>& params, distributed::ProcessGroup& group,
                            const InnerOptimizerFactory& factory, const ZeroOptions& options);

  const std::vector<Tensor>& params() const { return param_groups().front().params; }
  // Makes every parameter a view of its slot in its flat segment (copying its values there) unless it is one.
  void flatten_parameters();
  // ZeRO-2: DDP's gradient shards (one per segment), or none before the first synchronised backward.
  std::vector<Tensor> gradient_shards() const;
  // ZeRO-1: segment `segment`'s gradient shard, copied out of param.grad (zeros where a parameter has none).
  Tensor copied_gradient_shard(size_t segment) const;
  // Views of the parts of param.grad in this rank's shard (ZeRO-1), for norms.
  std::vector<Tensor> shard_gradient_views() const;
  void check_single_group(const char* what) const;
  void push_options();

  std::shared_ptr<distributed::ProcessGroup> group_;
  ZeroOptions options_;
  distributed::ShardLayout layout_;
  // Per segment: the padded flat buffer whose slots the parameters are views of (W * S elements), and this
  // rank's block of it (S elements), the inner optimizer's parameter.
  std::vector<Tensor> flats_;
  std::vector<Tensor> shard_params_;
  std::unique_ptr<Optimizer> inner_;
  distributed::DistributedDataParallel* ddp_ = nullptr;
  std::optional<OptimizerStateDict> consolidated_;
};

}  // namespace syncgrad::optim
