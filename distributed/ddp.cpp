// DistributedDataParallel: the construction checks and broadcasts, forward with buffer broadcast (timed for
// logging_data()), the communication state of a checkpoint, and load_model_state's "module." prefix handling.
#include "distributed/ddp.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "autograd/grad_mode.h"
#include "distributed/consistency.h"
#include "distributed/errors.h"
#include "distributed/reduce_scatter_hook.h"
#include "tensor/check.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::distributed {

namespace {

// What every rank must share: the parameters and buffers (name, dtype, shape, frozen) in order, then the options.
Settings describe(const nn::Module& module, const DDPOptions& options, const CommHook& hook) {
  Settings settings;
  for (const auto& [name, p] : module.named_parameters()) {
    settings.emplace_back("parameter " + name,
                          std::string(dtype_name(p.dtype())) + " " + shape_str(p.sizes()) + (p.requires_grad() ? "" : " frozen"));
  }
  for (const auto& [name, b] : module.named_buffers()) {
    settings.emplace_back("buffer " + name, std::string(dtype_name(b.dtype())) + " " + shape_str(b.sizes()));
  }
  settings.emplace_back("bucket_cap_mb", setting_text(options.bucket_cap_mb));
  settings.emplace_back("first_bucket_mb", setting_text(options.first_bucket_mb));
  settings.emplace_back("find_unused_parameters", setting_text(options.find_unused_parameters));
  settings.emplace_back("gradient_as_bucket_view", setting_text(options.gradient_as_bucket_view));
  settings.emplace_back("broadcast_buffers", setting_text(options.broadcast_buffers));
  settings.emplace_back("overlap", setting_text(options.overlap));
  settings.emplace_back("check_step_agreement", setting_text(options.check_step_agreement));
  settings.emplace_back("comm_hook", hook.name());
  return settings;
}

void broadcast_all(ProcessGroup& group, const nn::StateDict& tensors, int root = 0) {
  std::vector<std::shared_ptr<Work>> works;
  for (const auto& [name, t] : tensors) works.push_back(group.broadcast(t, root));
  for (auto& work : works) work->wait();
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 std::shared_ptr<ProcessGroup> group, DDPOptions options)
    : nn::Module("DistributedDataParallel"), module_(std::move(module)), group_(std::move(group)),
      options_(std::move(options)) {
  SYNCGRAD_CHECK(module_, ValueError, "DistributedDataParallel: the module is null");
  SYNCGRAD_CHECK(group_, ValueError, "DistributedDataParallel: the process group is null");
  // Written so that NaN fails too; the cap keeps the conversion to bytes defined.
  const auto bucket_size_ok = [](double mib) { return mib > 0 && mib <= kMaxBucketMiB; };
  SYNCGRAD_CHECK(bucket_size_ok(options_.bucket_cap_mb) && bucket_size_ok(options_.first_bucket_mb), ValueError,
                 "DistributedDataParallel: bucket_cap_mb and first_bucket_mb must be positive and at most ",
                 std::to_string(kMaxBucketMiB), " MiB (got ", std::to_string(options_.bucket_cap_mb), " and ",
                 std::to_string(options_.first_bucket_mb), ")");
  register_module("module", module_);
  SYNCGRAD_CHECK(!options_.gradient_sharding || !options_.gradient_as_bucket_view, ValueError,
                 "DistributedDataParallel: gradient_sharding keeps no full gradients, so there is no bucket view to "
                 "hand out; leave gradient_as_bucket_view false");
  if (!options_.comm_hook) options_.comm_hook = options_.gradient_sharding ? reduce_scatter_hook() : allreduce_hook();
  check_sharding_hook(options_.gradient_sharding, *options_.comm_hook);
  check_same_on_all_ranks(*group_, describe(*module_, options_, *options_.comm_hook), "DistributedDataParallel",
                          "every rank must build the same model and pass the same DDP options");
  {
    NoGradGuard no_grad;
    broadcast_all(*group_, module_->named_parameters());
    broadcast_all(*group_, module_->named_buffers());
  }
  std::vector<std::pair<std::string, Tensor>> trainable;
  for (const auto& [name, p] : module_->named_parameters()) {
    if (p.requires_grad()) trainable.emplace_back(name, p);
  }
  SYNCGRAD_CHECK(
      !trainable.empty(), ValueError,
      "DistributedDataParallel: the module has no parameter that requires grad; there is nothing to synchronise");
  reducer_ = Reducer::create(std::move(trainable), group_, options_);
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module, DDPOptions options)
    : DistributedDataParallel(std::move(module), default_group_ptr(), std::move(options)) {}

void DistributedDataParallel::broadcast_buffers() { broadcast_buffers_from(0); }

void DistributedDataParallel::broadcast_buffers_from(int root) {
  NoGradGuard no_grad;
  broadcast_all(*group_, module_->named_buffers(), root);
}

void DistributedDataParallel::before_forward() {
  const Join::Forward forward{.counted = is_training() && autograd::GradMode::is_enabled(),
                              .broadcasts = options_.broadcast_buffers && group_->size() > 1 && is_training(),
                              .syncs = reducer_->sync()};
  const int buffer_source = join_ ? join_->notify_forward(forward) : 0;
  if (forward.broadcasts) broadcast_buffers_from(buffer_source);
  if (forward.counted) reducer_->note_forward();
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  const auto start = std::chrono::steady_clock::now();
  before_forward();
  Tensor output = module_->forward(input);
  record_forward_time(start);
  return output;
}

Tensor DistributedDataParallel::forward_many(const std::vector<Tensor>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  before_forward();
  Tensor output = module_->forward_many(inputs);
  record_forward_time(start);
  return output;
}

void DistributedDataParallel::record_forward_time(std::chrono::steady_clock::time_point start) {
  if (!is_training() || !autograd::GradMode::is_enabled()) return;
  recent_forward_seconds_.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (recent_forward_seconds_.size() > Reducer::kRecentSteps) recent_forward_seconds_.pop_front();
}

DDPLoggingData DistributedDataParallel::logging_data() const {
  DDPLoggingData d;
  d.world_size = group_->size();
  d.rank = group_->rank();
  d.backend = group_->backend_name();
  d.module_name = module_->type_name();
  d.bucket_cap_mb = options_.bucket_cap_mb;
  d.first_bucket_mb = options_.first_bucket_mb;
  d.find_unused_parameters = options_.find_unused_parameters;
  d.gradient_as_bucket_view = options_.gradient_as_bucket_view;
  d.broadcast_buffers = options_.broadcast_buffers;
  d.overlap = options_.overlap;
  d.comm_hook = reducer_->comm_hook()->name();
  for (const auto& [name, p] : module_->named_parameters()) {
    if (!p.requires_grad()) continue;
    ++d.num_parameter_tensors;
    d.total_parameter_bytes += static_cast<int64_t>(p.nbytes());
  }
  d.bucket_sizes_bytes = reducer_->bucket_bytes();
  for (const auto& names : reducer_->bucket_names()) d.bucket_parameter_counts.push_back(names.size());
  d.buckets_rebuilt = !reducer_->rebuilt_order().empty();
  d.unused_parameters = reducer_->unused_in_last_backward();
  d.iterations = reducer_->iteration();
  for (const DDPStats& step : reducer_->recent_stats()) {
    d.avg_backward_compute_seconds += step.backward_compute_seconds;
    d.avg_comm_seconds += step.comm_seconds;
    d.avg_exposed_comm_seconds += step.exposed_seconds;
  }
  d.averaged_steps = static_cast<int64_t>(reducer_->recent_stats().size());
  if (d.averaged_steps > 0) {
    const auto n = static_cast<double>(d.averaged_steps);
    d.avg_backward_compute_seconds /= n;
    d.avg_comm_seconds /= n;
    d.avg_exposed_comm_seconds /= n;
  }
  for (double seconds : recent_forward_seconds_) d.avg_forward_seconds += seconds;
  d.averaged_forwards = static_cast<int64_t>(recent_forward_seconds_.size());
  if (d.averaged_forwards > 0) d.avg_forward_seconds /= static_cast<double>(d.averaged_forwards);
  if (d.avg_comm_seconds > 0) {
    d.comm_overlap_ratio = 1.0 - std::min(1.0, d.avg_exposed_comm_seconds / d.avg_comm_seconds);
  }
  return d;
}

std::vector<Tensor> DistributedDataParallel::gradient_shards() const {
  const auto* hook = dynamic_cast<const ReduceScatterHook*>(reducer_->comm_hook().get());
  return hook ? hook->shards() : std::vector<Tensor>{};
}

std::vector<std::pair<std::string, Tensor>> DistributedDataParallel::comm_state() const {
  std::vector<std::pair<std::string, Tensor>> state = {{"iteration", tensor({reducer_->iteration()})}};
  const std::vector<int64_t>& order = reducer_->rebuilt_order();
  if (!order.empty()) {
    state.emplace_back("bucket_order", from_vector(order, {static_cast<int64_t>(order.size())}));
  }
  for (auto& [key, value] : reducer_->comm_hook()->state_dict()) state.emplace_back("hook." + key, value);
  return state;
}

void DistributedDataParallel::load_comm_state(const std::vector<std::pair<std::string, Tensor>>& state) {
  std::optional<int64_t> iteration;
  std::optional<std::vector<int64_t>> bucket_order;
  std::vector<std::pair<std::string, Tensor>> hook_state;
  for (const auto& [key, value] : state) {
    if (key == "iteration") {
      SYNCGRAD_CHECK(value.numel() == 1 && value.dtype() == DType::i64, ValueError,
                     "DistributedDataParallel::load_comm_state: \"iteration\" must be one int64, got ",
                     value.numel(), " value(s) of ", dtype_name(value.dtype()));
      iteration = value.contiguous().data_ptr<int64_t>()[0];
    } else if (key == "bucket_order") {
      SYNCGRAD_CHECK(value.dim() == 1 && value.dtype() == DType::i64, ValueError,
                     "DistributedDataParallel::load_comm_state: \"bucket_order\" must be a list of int64, got ",
                     value.dim(), " dimension(s) of ", dtype_name(value.dtype()));
      const Tensor order = value.contiguous();
      bucket_order.emplace(order.data_ptr<int64_t>(), order.data_ptr<int64_t>() + order.numel());
    } else if (key.rfind("hook.", 0) == 0) {
      hook_state.emplace_back(key.substr(5), value);
    } else {
      throw ValueError("DistributedDataParallel::load_comm_state: unknown entry \"" + key +
                       "\" (expected \"iteration\", \"bucket_order\" and \"hook.<key>\")");
    }
  }
  SYNCGRAD_CHECK(iteration.has_value(), ValueError,
                 "DistributedDataParallel::load_comm_state: the state has no \"iteration\" entry");
  if (bucket_order) reducer_->adopt_rebuilt_order(*bucket_order);
  reducer_->comm_hook()->load_state_dict(hook_state);
  reducer_->set_iteration(*iteration);
}

void load_model_state(nn::Module& model, nn::StateDict state, bool strict) {
  nn::consume_prefix_if_present(state, "module.");
  model.load_state_dict(state, strict);
}

}  // namespace syncgrad::distributed
