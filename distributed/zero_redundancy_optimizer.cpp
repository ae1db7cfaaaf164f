// ZeroRedundancyOptimizer: the shard tensors and the inner optimizer, the step (gradients into the shards, inner
// step, allgather back), inf/NaN agreement and clipping across shards, and the consolidated state.
#include "distributed/zero_redundancy_optimizer.h"

#include <cmath>
#include <limits>
#include <unordered_map>

#include "autograd/grad_mode.h"
#include "distributed/ddp.h"
#include "distributed/host_values.h"
#include "distributed/zero_state.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/grad_scale.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/unary.h"
#include "tensor/ops/views.h"

namespace syncgrad::optim {
namespace {

constexpr const char* kName = "ZeroRedundancyOptimizer";

size_t mib_bytes(double mb) { return static_cast<size_t>(mb * 1024 * 1024); }

// A fingerprint of the parameter list that every rank must share: count, then per parameter its shape and dtype.
std::vector<int64_t> params_fingerprint(const std::vector<Tensor>& params) {
  uint64_t hash = 1469598103934665603ull;
  const auto mix = [&](uint64_t v) { hash = (hash ^ v) * 1099511628211ull; };
  int64_t numel = 0;
  for (const Tensor& p : params) {
    mix(static_cast<uint64_t>(p.dtype()) + 1000);
    for (int64_t size : p.sizes()) mix(static_cast<uint64_t>(size));
    mix(0xffffu);
    numel += p.numel();
  }
  return {static_cast<int64_t>(params.size()), numel, static_cast<int64_t>(hash)};
}

void check_same_params_everywhere(distributed::ProcessGroup& group, const std::vector<Tensor>& params) {
  if (group.size() == 1) return;
  const std::vector<int64_t> mine = params_fingerprint(params);
  const auto all = distributed::PendingValues::allgather(group, mine).wait();
  for (int r = 0; r < group.size(); ++r) {
    SYNCGRAD_CHECK(all[r] == all[0], ValueError, kName, ": rank ", r, " passed ", all[r][0], " parameters (",
                   all[r][1], " elements) and rank 0 passed ", all[0][0], " (", all[0][1], " elements)",
                   all[r][0] == all[0][0] && all[r][1] == all[0][1] ? ", with other shapes or dtypes" : "",
                   "; every rank must construct it over the same parameters (the same model)");
  }
}

}  // namespace

struct ZeroRedundancyOptimizer::Shards {
  distributed::ShardLayout layout;
  std::vector<Tensor> flats;
  std::vector<Tensor> params;
  std::unique_ptr<Optimizer> inner;
};

ZeroRedundancyOptimizer::Shards ZeroRedundancyOptimizer::make_shards(const std::vector<Tensor>& params,
                                                                     distributed::ProcessGroup& group,
                                                                     const InnerOptimizerFactory& factory,
                                                                     const ZeroOptions& options) {
  SYNCGRAD_CHECK(!params.empty(), ValueError, kName, ": got an empty parameter list; pass the tensors to optimize");
  SYNCGRAD_CHECK(group.is_member(), ValueError, kName,
                 ": this process is not a member of the process group it was given (new_group without this rank); "
                 "construct it on the ranks of the group only");
  SYNCGRAD_CHECK(options.first_bucket_mb > 0 && options.bucket_cap_mb > 0, ValueError, kName,
                 ": bucket caps must be > 0 MiB (got first_bucket_mb ", options.first_bucket_mb, ", bucket_cap_mb ",
                 options.bucket_cap_mb, ")");
  SYNCGRAD_CHECK(static_cast<bool>(factory), ValueError, kName, ": the inner optimizer factory is empty");
  const Device device = group.tensor_device();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    SYNCGRAD_CHECK(p.defined(), ValueError, kName, ": parameter ", i, " is an undefined tensor");
    SYNCGRAD_CHECK(p.device().type == device.type && (device.is_cpu() || p.device() == device), ValueError, kName,
                   ": parameter ", i, " is on ", p.device().str(), " but the ", group.backend_name(),
                   " process group communicates tensors on ", device.str(),
                   "; move the model there first (or use the process group of its device)");
    SYNCGRAD_CHECK(p.requires_grad(), ValueError, kName, ": parameter ", i, " (shape ", shape_str(p.sizes()),
                   ") does not require grad; ZeRO steps its shards as a whole, so pass only the trainable parameters");
    SYNCGRAD_CHECK(p.is_contiguous(), ValueError, kName, ": parameter ", i, " (shape ", shape_str(p.sizes()),
                   ") is not contiguous; ZeRO copies parameters in and out of flat shards");
  }
  check_same_params_everywhere(group, params);
  distributed::ShardLayout layout(params, group.size(), mib_bytes(options.first_bucket_mb),
                                  mib_bytes(options.bucket_cap_mb));
  std::vector<Tensor> flats, shard_params;
  NoGradGuard no_grad;
  for (const distributed::ShardSegment& segment : layout.segments()) {
    Tensor flat = zeros({segment.shard_numel * group.size()}, TensorOptions{segment.dtype, segment.device});
    flats.push_back(flat);
    shard_params.push_back(raw::narrow(flat, 0, group.rank() * segment.shard_numel, segment.shard_numel));
  }
  std::unique_ptr<Optimizer> inner = factory(shard_params);
  SYNCGRAD_CHECK(inner != nullptr, ValueError, kName, ": the inner optimizer factory returned null");
  bool same = inner->param_groups().size() == 1 && inner->param_groups()[0].params.size() == shard_params.size();
  for (size_t s = 0; same && s < shard_params.size(); ++s) {
    same = inner->param_groups()[0].params[s].impl() == shard_params[s].impl();
  }
  SYNCGRAD_CHECK(same, ValueError, kName,
                 ": the inner optimizer factory must build an optimizer over exactly the shard tensors it is given, in "
                 "one parameter group");
  return Shards{std::move(layout), std::move(flats), std::move(shard_params), std::move(inner)};
}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params,
                                                 std::shared_ptr<distributed::ProcessGroup> group,
                                                 const InnerOptimizerFactory& factory, ZeroOptions options)
    : ZeroRedundancyOptimizer(params, group, options,
                              make_shards(params, *(group ? group : throw ValueError(std::string(kName) +
                                                                                     ": the process group is null")),
                                          factory, options)) {}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params,
                                                 std::shared_ptr<distributed::ProcessGroup> group, ZeroOptions options,
                                                 Shards shards)
    : Optimizer(kName, shards.inner->param_groups()[0].options),
      group_(std::move(group)),
      options_(options),
      layout_(std::move(shards.layout)),
      flats_(std::move(shards.flats)),
      shard_params_(std::move(shards.params)),
      inner_(std::move(shards.inner)) {
  init_params(std::move(params));
  flatten_parameters();
}

void ZeroRedundancyOptimizer::flatten_parameters() {
  NoGradGuard no_grad;
  for (size_t s = 0; s < layout_.segments().size(); ++s) {
    const distributed::ShardSegment& segment = layout_.segments()[s];
    for (size_t k = 0; k < segment.params.size(); ++k) {
      const Tensor& p = params()[segment.params[k]];
      const Tensor slot = raw::view(raw::narrow(flats_[s], 0, segment.offsets[k], p.numel()), p.sizes());
      if (p.data_ptr() == slot.data_ptr() && p.is_contiguous()) continue;
      SYNCGRAD_CHECK(p.dtype() == slot.dtype() && p.device() == slot.device() && p.sizes() == slot.sizes(), ValueError,
                     kName, ": parameter ", segment.params[k], " became ", dtype_name(p.dtype()), " ",
                     shape_str(p.sizes()), " on ", p.device().str(), " after the optimizer was built over it as ",
                     dtype_name(slot.dtype()), " ", shape_str(slot.sizes()), " on ", slot.device().str(),
                     "; convert or move the model before constructing the optimizer");
      raw::copy_(slot, p);
      p.impl()->set_data(*slot.impl());  // same tensor (DDP's hooks, the model), now a view of the flat segment
    }
  }
}

void ZeroRedundancyOptimizer::validate_options(const std::map<std::string, double>& options) const {
  inner_->validate_options(options);
}

void ZeroRedundancyOptimizer::check_single_group(const char* what) const {
  SYNCGRAD_CHECK(param_groups().size() == 1, ValueError, kName, ".", what, ": the optimizer has ",
                 param_groups().size(),
                 " parameter groups; ZeRO shards the one group it was constructed with (add_param_group is not "
                 "supported)");
}

void ZeroRedundancyOptimizer::use_gradient_shards(distributed::DistributedDataParallel& ddp) {
  SYNCGRAD_CHECK(ddp.options().gradient_sharding, ValueError, kName,
                 ".use_gradient_shards: the DistributedDataParallel was constructed without gradient_sharding; set "
                 "DDPOptions::gradient_sharding = true (ZeRO-2), or leave it out for ZeRO-1");
  SYNCGRAD_CHECK(&ddp.process_group() == group_.get(), ValueError, kName,
                 ".use_gradient_shards: the DistributedDataParallel uses another process group");
  std::unordered_map<std::string, const TensorImpl*> by_name;
  for (const auto& [name, p] : ddp.module()->named_parameters()) by_name[name] = p.impl();
  std::unordered_map<const TensorImpl*, size_t> index_of;
  for (size_t i = 0; i < params().size(); ++i) index_of[params()[i].impl()] = i;
  const std::vector<std::vector<std::string>> buckets = ddp.bucket_names();
  bool same = buckets.size() == layout_.segments().size();
  for (size_t b = 0; same && b < buckets.size(); ++b) {
    const std::vector<size_t>& segment = layout_.segments()[b].params;
    same = buckets[b].size() == segment.size();
    for (size_t k = 0; same && k < segment.size(); ++k) {
      auto it = index_of.find(by_name[buckets[b][k]]);
      same = it != index_of.end() && it->second == segment[k];
    }
  }
  SYNCGRAD_CHECK(same, ValueError, kName,
                 ".use_gradient_shards: the DistributedDataParallel's buckets are not this optimizer's segments; "
                 "construct both over the same parameters (all trainable) with the same first_bucket_mb and "
                 "bucket_cap_mb");
  ddp_ = &ddp;
}

std::vector<Tensor> ZeroRedundancyOptimizer::shard_gradient_views() const {
  std::vector<Tensor> views;
  for (size_t s = 0; s < layout_.segments().size(); ++s) {
    for (const distributed::ShardPiece& piece : layout_.pieces(s, group_->rank())) {
      const Tensor grad = params()[piece.param].grad();
      if (!grad.defined()) continue;
      views.push_back(raw::narrow(raw::reshape(grad, {grad.numel()}), 0, piece.param_offset, piece.numel));
    }
  }
  return views;
}

std::vector<Tensor> ZeroRedundancyOptimizer::gradient_shards() const {
  if (!ddp_) return {};
  std::vector<Tensor> shards = ddp_->gradient_shards();
  if (shards.size() != shard_params_.size()) return {};
  for (size_t s = 0; s < shards.size(); ++s) {
    if (!shards[s].defined()) return {};
    SYNCGRAD_CHECK(shards[s].numel() == layout_.segments()[s].shard_numel, ValueError, kName,
                   ": DDP's gradient shard ", s, " has ", shards[s].numel(), " elements but the optimizer's has ",
                   layout_.segments()[s].shard_numel);
  }
  return shards;
}

Tensor ZeroRedundancyOptimizer::copied_gradient_shard(size_t segment) const {
  Tensor shard = zeros({layout_.segments()[segment].shard_numel},
                       TensorOptions{shard_params_[segment].dtype(), shard_params_[segment].device()});
  for (const distributed::ShardPiece& piece : layout_.pieces(segment, group_->rank())) {
    const Tensor grad = params()[piece.param].grad();
    if (!grad.defined()) continue;
    raw::copy_(raw::narrow(shard, 0, piece.shard_offset, piece.numel),
               raw::narrow(raw::reshape(grad, {grad.numel()}), 0, piece.param_offset, piece.numel));
  }
  return shard;
}

void ZeroRedundancyOptimizer::push_options() {
  check_single_group("step");
  inner_->param_groups()[0].options = param_groups()[0].options;
}

void ZeroRedundancyOptimizer::step() {
  NoGradGuard no_grad;
  push_options();
  flatten_parameters();  // the parameters are views of the flat segments (again, if something re-pointed them)
  const size_t n = layout_.segments().size();
  std::vector<Tensor> shards;
  if (ddp_) {
    shards = gradient_shards();
    if (shards.empty()) return;  // no synchronised backward yet
  } else {
    bool any = false;
    for (const Tensor& p : params()) any = any || p.grad().defined();
    if (!any) return;
  }
  consolidated_.reset();
  // The shards are views of the flat segments, so the inner step updates this rank's block of each in place and
  // an in-place allgather of every segment completes the parameters, segment by segment behind the steps.
  // ZeRO-1 copies one segment's gradient shard out of param.grad at a time (one inner step per segment: the
  // others have no gradient then and are skipped), so the copies never hold more than one segment.
  std::vector<std::shared_ptr<distributed::Work>> works;
  const auto gather = [&](size_t s) {
    shard_params_[s].set_grad(Tensor());
    works.push_back(group_->allgather_into_tensor(flats_[s], shard_params_[s]));
  };
  if (ddp_) {
    for (size_t s = 0; s < n; ++s) shard_params_[s].set_grad(shards[s]);
    inner_->step();
    for (size_t s = 0; s < n; ++s) gather(s);
  } else {
    for (size_t s = 0; s < n; ++s) {
      shard_params_[s].set_grad(copied_gradient_shard(s));
      inner_->step();
      gather(s);
    }
  }
  for (const auto& work : works) work->wait();
}

bool ZeroRedundancyOptimizer::unscale_gradients_(double inv_scale) {
  bool found_inf = false;
  if (ddp_) {
    const std::vector<Tensor> shards = gradient_shards();
    if (!shards.empty()) found_inf = raw::unscale_grads_(shards, inv_scale);
  } else {
    found_inf = Optimizer::unscale_gradients_(inv_scale);
  }
  // One rank's shard may overflow while the others' do not: every rank skips the step if any found one.
  return distributed::PendingValues::allreduce(*group_, {found_inf ? 1 : 0}, distributed::ReduceOp::kMax)
             .wait()[0][0] != 0;
}

double ZeroRedundancyOptimizer::clip_grad_norm_(double max_norm, double norm_type, bool error_if_nonfinite) {
  SYNCGRAD_CHECK(norm_type > 0.0, ValueError, kName, ".clip_grad_norm_: invalid norm_type ", norm_type,
                 " (must be > 0, or infinity for the max norm)");
  SYNCGRAD_CHECK(max_norm >= 0.0, ValueError, kName, ".clip_grad_norm_: invalid max_norm ", max_norm,
                 " (must be >= 0)");
  NoGradGuard no_grad;
  const bool infinity = std::isinf(norm_type);
  const std::vector<Tensor> shards = ddp_ ? gradient_shards() : shard_gradient_views();
  double partial = 0, nan = 0;
  for (const Tensor& g : shards) {
    if (g.numel() == 0) continue;
    // As optim::clip_grad_norm_ computes it: half gradients in float32, squares summed in float64.
    const bool half = g.dtype() == DType::f16 || g.dtype() == DType::bf16;
    const Tensor x = half ? raw::to(g, DType::f32) : g;
    double part = 0;
    if (infinity) {
      part = raw::to(raw::max(raw::abs(x)), DType::f64).item<double>();
    } else if (norm_type == 2.0) {
      part = raw::sum(raw::square(x), {}, false, DType::f64).item<double>();
    } else if (norm_type == 1.0) {
      part = raw::sum(raw::abs(x), {}, false, DType::f64).item<double>();
    } else {
      part = raw::sum(raw::pow(raw::abs(raw::to(x, DType::f64)), Scalar(norm_type)), {}, false, DType::f64)
                 .item<double>();
    }
    if (std::isnan(part)) nan = 1;
    partial = infinity ? std::max(partial, part) : partial + part;
  }
  // [partial sum (or max), NaN seen]: a max-reduction could drop a NaN, so it travels as a flag.
  Tensor both = empty({2}, TensorOptions{DType::f64, group_->tensor_device()});
  raw::copy_(both, from_vector(std::vector<double>{partial, nan}, {2}));
  group_->allreduce(both, infinity ? distributed::ReduceOp::kMax : distributed::ReduceOp::kSum)->wait();
  const Tensor host = raw::to(both, kCPU);
  const double accumulated = host.data_ptr<double>()[0];
  const bool saw_nan = host.data_ptr<double>()[1] != 0;
  double total_norm = infinity || norm_type == 1.0 ? accumulated : std::pow(accumulated, 1.0 / norm_type);
  if (saw_nan) total_norm = std::numeric_limits<double>::quiet_NaN();
  SYNCGRAD_CHECK(!error_if_nonfinite || std::isfinite(total_norm), ValueError, kName,
                 ".clip_grad_norm_: the total norm of order ", norm_type, " of the gradients is ", total_norm,
                 ", so they cannot be clipped; pass error_if_nonfinite = false to scale them by the non-finite norm "
                 "anyway");
  const double coefficient = max_norm / (total_norm + 1e-6);
  if (!(coefficient >= 1.0)) {
    if (ddp_) {
      for (const Tensor& g : shards) raw::mul_(g, Scalar(coefficient));
    } else {
      for (const Tensor& p : params()) {
        if (p.grad().defined()) raw::mul_(p.grad(), Scalar(coefficient));
      }
    }
  }
  return total_norm;
}

void ZeroRedundancyOptimizer::consolidate_state_dict(int to_rank) {
  SYNCGRAD_CHECK(to_rank >= 0 && to_rank < group_->size(), ValueError, kName, ".consolidate_state_dict: rank ",
                 to_rank, " out of range for a group of ", group_->size());
  check_single_group("consolidate_state_dict");
  NoGradGuard no_grad;
  const OptimizerStateDict mine = inner_->state_dict();
  const int world = group_->size();
  // Every rank holds state for the same entries (the shards step together): gather each flat entry.
  std::vector<OptimizerStateDict> all(static_cast<size_t>(world));
  for (auto& state : all) state.groups = mine.groups;
  for (const auto& [key, value] : mine.tensors) {
    Tensor local = raw::to(value, group_->tensor_device());
    Tensor gathered = empty({local.numel() * world}, TensorOptions{local.dtype(), local.device()});
    group_->allgather_into_tensor(gathered, raw::contiguous(local))->wait();
    if (group_->rank() != to_rank) continue;
    const Tensor host = raw::to(gathered, kCPU);
    for (int r = 0; r < world; ++r) {
      Tensor part = raw::clone(raw::narrow(host, 0, r * local.numel(), local.numel()));
      all[static_cast<size_t>(r)].tensors.emplace_back(key, value.dim() == 0 ? raw::view(part, {}) : part);
    }
  }
  consolidated_.reset();
  if (group_->rank() == to_rank) {
    consolidated_ = assemble_zero_state(layout_, all, param_groups()[0].options, params(),
                                        {inner_->state_buffer_names(), inner_->counts_steps()});
  }
}

OptimizerStateDict ZeroRedundancyOptimizer::state_dict() const {
  if (consolidated_) return *consolidated_;
  SYNCGRAD_CHECK(group_->size() == 1, ValueError, kName, ".state_dict: rank ", group_->rank(),
                 " holds no consolidated state; call consolidate_state_dict(to_rank) on every rank first, then "
                 "state_dict() on to_rank (it is valid until the next step)");
  check_single_group("state_dict");
  return assemble_zero_state(layout_, {inner_->state_dict()}, param_groups()[0].options, params(),
                             {inner_->state_buffer_names(), inner_->counts_steps()});
}

void ZeroRedundancyOptimizer::load_state_dict(const OptimizerStateDict& state) {
  check_single_group("load_state_dict");
  SYNCGRAD_CHECK(state.groups.size() == 1, ValueError, kName, ".load_state_dict: the state has ", state.groups.size(),
                 " parameter groups but the optimizer has 1");
  auto count = state.groups[0].find("params");
  SYNCGRAD_CHECK(count == state.groups[0].end() || count->second == static_cast<double>(params().size()), ValueError,
                 kName, ".load_state_dict: the state is for ", count->second, " parameters but the optimizer has ",
                 params().size());
  inner_->load_state_dict(shard_zero_state(layout_, group_->rank(), state, params(),
                                           {inner_->state_buffer_names(), inner_->counts_steps()}));
  param_groups()[0].options = inner_->param_groups()[0].options;
  consolidated_.reset();
}

}  // namespace syncgrad::optim
