// Reducer: bucket construction, the per-parameter ready hook, in-order bucket launches, the end-of-backward
// wait and write-back, unused-parameter handling and the one-time rebuild in gradient-ready order.
#include "distributed/reducer.h"

#include <chrono>
#include <numeric>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "distributed/bucket_plan.h"
#include "distributed/collective_caller.h"
#include "distributed/errors.h"
#include "distributed/flight_recorder.h"
#include "distributed/reduce_scatter_hook.h"
#include "profiler/events.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::distributed {

std::shared_ptr<Reducer> Reducer::create(std::vector<std::pair<std::string, Tensor>> params,
                                         std::shared_ptr<ProcessGroup> group, DDPOptions options) {
  auto reducer = std::make_shared<Reducer>(std::move(params), std::move(group), std::move(options));
  std::weak_ptr<Reducer> weak = reducer;
  for (size_t i = 0; i < reducer->params_.size(); ++i) {
    reducer->params_[i].second.register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (auto self = weak.lock()) self->on_gradient_ready(i);
    });
  }
  return reducer;
}

Reducer::Reducer(std::vector<std::pair<std::string, Tensor>> params, std::shared_ptr<ProcessGroup> group,
                 DDPOptions options)
    : params_(std::move(params)), group_(std::move(group)), options_(std::move(options)) {
  std::vector<size_t> reverse(params_.size());
  std::iota(reverse.rbegin(), reverse.rend(), 0);
  build_buckets(reverse);
  set_comm_hook(options_.comm_hook);
  if (options_.static_graph) {
    std::vector<std::string> names;
    for (const auto& [name, p] : params_) names.push_back(name);
    static_graph_.emplace(std::move(names));
  }
}

void Reducer::set_comm_hook(std::shared_ptr<CommHook> hook) {
  SYNCGRAD_CHECK(!in_backward_, DistributedError,
                 "DistributedDataParallel: cannot change the comm hook during backward");
  if (!hook) hook = options_.gradient_sharding ? reduce_scatter_hook() : allreduce_hook();
  check_sharding_hook(options_.gradient_sharding, *hook);
  // Buckets are split by dtype and device, and rebuilding them later keeps those, so checking now is enough.
  for (const Bucket& bucket : buckets_) hook->check_bucket(bucket.options.dtype, bucket.options.device);
  hook_ = std::move(hook);
}

void Reducer::build_buckets(const std::vector<size_t>& order) {
  std::vector<ParamInfo> info;
  for (const auto& [name, p] : params_) info.push_back({p.numel(), p.dtype(), p.device()});
  const auto mib = [](double mb) { return static_cast<size_t>(mb * 1024 * 1024); };
  const auto plan = plan_buckets(info, order, mib(options_.first_bucket_mb), mib(options_.bucket_cap_mb));
  buckets_.clear();
  bucket_of_.assign(params_.size(), 0);
  slot_of_.assign(params_.size(), 0);
  for (size_t b = 0; b < plan.size(); ++b) {
    Bucket bucket;
    bucket.params = plan[b];
    int64_t total = 0;
    for (size_t index : plan[b]) total += params_[index].second.numel();
    if (options_.gradient_sharding) total = padded_to_multiple(total, group_->size());
    const Tensor& first = params_[plan[b].front()].second;
    bucket.grad.index = b;
    bucket.grad.parameters = plan[b];
    bucket.numel = total;
    bucket.options = TensorOptions{first.dtype(), first.device()};
    for (size_t slot = 0; slot < plan[b].size(); ++slot) {
      bucket_of_[plan[b][slot]] = b;
      slot_of_[plan[b][slot]] = slot;
    }
    if (!options_.gradient_sharding) materialize(bucket);
    buckets_.push_back(std::move(bucket));
  }
}

void Reducer::materialize(Bucket& bucket) {
  if (bucket.grad.buffer.defined()) return;
  NoGradGuard no_grad;
  // Every parameter's slot is written (its gradient or zeros) before the bucket launches; only the padding
  // needs zeros.
  bucket.grad.buffer = empty({bucket.numel}, bucket.options);
  int64_t offset = 0;
  bucket.grad.gradients.clear();
  for (size_t index : bucket.params) {
    const Tensor& p = params_[index].second;
    bucket.grad.gradients.push_back(raw::view(raw::narrow(bucket.grad.buffer, 0, offset, p.numel()), p.sizes()));
    offset += p.numel();
  }
  if (offset < bucket.numel) raw::fill_(raw::narrow(bucket.grad.buffer, 0, offset, bucket.numel - offset), Scalar(0.0));
}

void Reducer::release_reduced_buffers(bool all) {
  if (!options_.gradient_sharding) return;
  for (size_t b = 0; b < next_launch_ && b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    if (!bucket.grad.buffer.defined() || !bucket.work || !(all || bucket.work->is_completed())) continue;
    bucket.grad.buffer = Tensor();
    bucket.grad.gradients.clear();
  }
}

void Reducer::set_iteration(int64_t iteration) {
  SYNCGRAD_CHECK(!in_backward_, DistributedError,
                 "DistributedDataParallel: cannot set the iteration count during backward");
  SYNCGRAD_CHECK(iteration >= 0, ValueError, "DistributedDataParallel: the iteration count must be >= 0, got ",
                 iteration);
  iteration_ = iteration;
}

std::vector<std::vector<std::string>> Reducer::bucket_names() const {
  std::vector<std::vector<std::string>> names;
  for (const Bucket& bucket : buckets_) {
    names.emplace_back();
    for (size_t index : bucket.params) names.back().push_back(params_[index].first);
  }
  return names;
}

std::vector<size_t> Reducer::bucket_bytes() const {
  std::vector<size_t> bytes;
  for (const Bucket& bucket : buckets_) bytes.push_back(static_cast<size_t>(bucket.numel) * element_size(bucket.options.dtype));
  return bytes;
}

std::vector<std::string> Reducer::unused_in_last_backward() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < used_.size(); ++i) {
    if (!used_[i]) names.push_back(params_[i].first);
  }
  return names;
}

void Reducer::on_gradient_ready(size_t index) {
  if (!sync_) return;
  if (!in_backward_) begin_backward();
  if (static_graph_) {
    if (static_graph_->arrive(index)) mark_ready(index, true);
    return;
  }
  SYNCGRAD_CHECK(!ready_[index], AutogradError, "DistributedDataParallel: parameter ", params_[index].first,
                 " got its gradient twice in one backward (reentrant activation checkpointing, nn::checkpoint, "
                 "recomputes a part that uses it, or one backward ran inside another); construct "
                 "DistributedDataParallel with static_graph = true if the graph is the same every iteration");
  mark_ready(index, true);
}

void Reducer::reset_for_backward() {
  in_backward_ = true;
  backward_start_ = std::chrono::steady_clock::now();
  ready_.assign(params_.size(), 0);
  used_.assign(params_.size(), 0);
  next_launch_ = 0;
  for (Bucket& bucket : buckets_) {
    bucket.pending = bucket.params.size();
    bucket.work.reset();
  }
}

void Reducer::begin_backward() {
  reset_for_backward();
  std::weak_ptr<Reducer> weak = weak_from_this();
  autograd::queue_callback([weak] {
    if (auto self = weak.lock()) self->finish_backward();
  });
  launch_step_check();
  if (static_graph_) {
    static_graph_->begin();
    for (size_t i : static_graph_->unused()) mark_ready(i, false);
  } else if (options_.find_unused_parameters) {
    // Parameters this backward cannot reach contribute zeros at once, so their buckets are not held up.
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!autograd::is_reachable(params_[i].second)) mark_ready(i, false);
    }
  }
}

void Reducer::set_gradient_divisor(int64_t divisor) {
  SYNCGRAD_CHECK(divisor >= 1, ValueError, "DistributedDataParallel: the gradient divisor must be >= 1, got ",
                 divisor);
  divisor_ = divisor;
}

void Reducer::shadow_backward() {
  SYNCGRAD_CHECK(!in_backward_, DistributedError,
                 "DistributedDataParallel: a joined rank cannot shadow a backward during its own backward");
  reset_for_backward();
  launch_step_check();
  for (size_t i = params_.size(); i-- > 0;) mark_ready(i, false);
  finish_backward(true);
}

void Reducer::mark_ready(size_t index, bool used) {
  NoGradGuard no_grad;
  profiler::Scope span("ddp", "DDP copy into bucket");
  span.arg("bucket", static_cast<int64_t>(bucket_of_[index])).arg("step", iteration_);
  Bucket& bucket = buckets_[bucket_of_[index]];
  const Tensor& view = view_of(index);
  if (used) {
    const Tensor grad = params_[index].second.grad();
    if (grad.data_ptr() != view.data_ptr()) raw::copy_(view, grad);
    raw::mul_(view, Scalar(1.0 / static_cast<double>(divisor_ > 0 ? divisor_ : group_->size())));
    if (options_.gradient_sharding) params_[index].second.set_grad(Tensor());  // only the bucket holds it now
  } else {
    raw::fill_(view, Scalar(0.0));
  }
  ready_[index] = 1;
  used_[index] = used ? 1 : 0;
  if (!rebuilt_) ready_order_.push_back(index);
  if (--bucket.pending == 0 && options_.overlap) launch_full_buckets();
}

void Reducer::launch_full_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& bucket = buckets_[next_launch_];
    bucket.grad.iteration = iteration_;
    const CollectiveCaller caller("DDP bucket %zu", next_launch_);
    // The collectives the hook queues carry the label to the process group's worker (profiler/events.h).
    const profiler::Label label("DDP bucket", static_cast<int64_t>(next_launch_), iteration_);
    profiler::Scope span("ddp", "DDP launch");
    span.arg("bucket", static_cast<int64_t>(next_launch_)).arg("step", iteration_);
    bucket.work = hook_->launch(*group_, bucket.grad);
    ++next_launch_;
  }
  release_reduced_buffers(false);
}

void Reducer::finish_backward(bool shadow) {
  if (static_graph_ && !shadow) {  // a shadowed backward marks every parameter unused itself
    for (size_t i : static_graph_->finish()) mark_ready(i, true);
  }
  const double compute_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - backward_start_).count();
  // Parameters that never got a gradient still send zeros, so no other rank waits for a bucket forever.
  std::vector<std::string> missing;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!ready_[i]) {
      missing.push_back(params_[i].first);
      mark_ready(i, false);
    }
  }
  in_backward_ = false;
  launch_full_buckets();
  // From here on backward only waits: for the step check (the other ranks reaching this backward) and the buckets.
  const auto wait_start = std::chrono::steady_clock::now();
  verify_step_check();
  std::optional<PendingValues> used_anywhere;
  if (options_.find_unused_parameters || static_graph_) {
    const CollectiveCaller caller("DDP unused-parameter flags");
    used_anywhere = PendingValues::allreduce(*group_, std::vector<int64_t>(used_.begin(), used_.end()), ReduceOp::kMax);
  }
  stats_ = DDPStats{};
  std::vector<int64_t> used_flags;
  try {
    profiler::Scope span("ddp", "DDP wait for reductions");
    span.arg("step", iteration_);
    for (Bucket& bucket : buckets_) bucket.work->wait();
    if (used_anywhere) used_flags = used_anywhere->wait()[0];
  } catch (const TimeoutError& e) {
    throw TimeoutError("DistributedDataParallel step " + std::to_string(iteration_) + ": " + e.what() +
                       ". If a rank ran fewer steps, give every rank the same number of batches "
                       "(DistributedSampler pads the shards to equal length), or train inside "
                       "DistributedDataParallel::join()");
  } catch (const PeerError& e) {
    throw PeerError("DistributedDataParallel step " + std::to_string(iteration_) + ": " + e.what());
  }
  stats_.exposed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  for (Bucket& bucket : buckets_) {
    hook_->finish(*group_, bucket.grad);
    stats_.comm_seconds += bucket.work->busy_seconds();
    stats_.bytes += static_cast<size_t>(bucket.numel) * element_size(bucket.options.dtype);
  }
  release_reduced_buffers(true);
  stats_.buckets = buckets_.size();
  stats_.backward_compute_seconds = compute_seconds;
  recent_stats_.push_back(stats_);
  if (recent_stats_.size() > kRecentSteps) recent_stats_.pop_front();

  std::vector<char> globally_used(params_.size(), 1);
  for (size_t i = 0; i < used_flags.size(); ++i) globally_used[i] = used_flags[i] != 0;
  if (!shadow) write_back(globally_used);
  ++iteration_;
  if (!rebuilt_) rebuild_in_ready_order();

  if (!missing.empty() && !options_.find_unused_parameters && !static_graph_) {
    std::string names;
    for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
    throw DistributedError(
        "DistributedDataParallel (rank " + std::to_string(group_->rank()) + ", iteration " +
        std::to_string(iteration_ - 1) + "): parameter(s) " + names +
        " received no gradient in this backward. Either make every parameter take part in the loss, or construct "
        "DistributedDataParallel with find_unused_parameters = true (syncgrad-train: --find-unused-parameters)");
  }
}

void Reducer::write_back(const std::vector<char>& globally_used) {
  if (options_.gradient_sharding) return;  // the averaged gradients are the hook's shards
  NoGradGuard no_grad;
  profiler::Scope span("ddp", "DDP write-back");
  span.arg("step", iteration_);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& param = params_[i].second;
    const Tensor grad = param.grad();
    if (!globally_used[i]) continue;  // no rank used it: its gradient stays as it was (undefined after zero_grad)
    const Tensor& view = view_of(i);
    if (options_.gradient_as_bucket_view) {
      if (grad.data_ptr() != view.data_ptr()) param.set_grad(view);
    } else if (grad.defined()) {
      raw::copy_(grad, view);
    } else {
      param.set_grad(raw::clone(view));
    }
  }
}

int64_t Reducer::plan_fingerprint() const {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the bucket membership
  for (const Bucket& bucket : buckets_) {
    for (size_t index : bucket.params) hash = (hash ^ (index + 1)) * 1099511628211ull;
    hash = (hash ^ 0xffffu) * 1099511628211ull;
  }
  return static_cast<int64_t>(hash);
}

void Reducer::launch_step_check() {
  step_check_.reset();
  if (!options_.check_step_agreement || group_->size() == 1) return;
  step_check_mine_ = {forwards_, plan_fingerprint()};
  const CollectiveCaller caller("DDP step check");
  const profiler::Label label("DDP step check", -1, iteration_);
  step_check_ = PendingValues::allgather(*group_, step_check_mine_);
}

void Reducer::verify_step_check() {
  if (!step_check_) return;
  std::vector<std::vector<int64_t>> all;
  try {
    all = step_check_->wait();
    step_check_.reset();
  } catch (const TimeoutError& e) {
    throw TimeoutError("DistributedDataParallel step " + std::to_string(iteration_) + " on rank " +
                       std::to_string(group_->rank()) + ": the other ranks did not reach this backward (" + e.what() +
                       "); a rank that ran fewer steps, stopped early or is stuck elsewhere leaves the others waiting");
  } catch (const PeerError& e) {
    throw PeerError("DistributedDataParallel step " + std::to_string(iteration_) + ": " + e.what() +
                    ". If that rank finished normally it ran fewer steps than this one: give every rank the same "
                    "number of batches (DistributedSampler pads the shards to equal length), or train inside "
                    "DistributedDataParallel::join()");
  }
  const std::vector<int64_t>& mine = step_check_mine_;
  std::string steps;
  bool same_step = true, same_plan = true;
  for (int r = 0; r < group_->size(); ++r) {
    const std::vector<int64_t>& theirs = all[r];
    same_step = same_step && theirs[0] == mine[0];
    same_plan = same_plan && theirs[1] == mine[1];
    steps += (r ? ", " : "") + std::string("rank ") + std::to_string(r) + " after " + std::to_string(theirs[0]);
  }
  if (!same_step) {
    const std::string message =
        "DistributedDataParallel: ranks are out of step in this backward (training forwards so far: " + steps +
        "); a rank skipped a backward or ran extra forwards. Every rank must run the same sequence of forward + "
        "backward steps (use no_sync() for accumulation on every rank alike)";
    throw DesyncError(message + flight_note(group_->flight_recorder(), message));
  }
  SYNCGRAD_CHECK(same_plan, DesyncError,
                 "DistributedDataParallel: ranks use different bucket plans in this backward; every rank must "
                 "construct DistributedDataParallel with the same model and options");
}

void Reducer::rebuild_in_ready_order() {
  rebuilt_ = true;
  if (group_->size() == 1 || buckets_.size() <= 1 || options_.gradient_sharding) return;
  // Rank 0's order, complete (parameters it never saw ready go last, in reverse registration order).
  std::vector<char> seen(params_.size(), 0);
  std::vector<size_t> order;
  for (size_t index : ready_order_) {
    if (!seen[index]) order.push_back(index);
    seen[index] = 1;
  }
  for (size_t i = params_.size(); i-- > 0;) {
    if (!seen[i]) order.push_back(i);
  }
  const CollectiveCaller caller("DDP bucket order");
  const std::vector<int64_t> shared =
      PendingValues::broadcast(*group_, std::vector<int64_t>(order.begin(), order.end()), 0).wait()[0];
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<size_t>(shared[i]);
  rebuild(order);
}

void Reducer::adopt_rebuilt_order(const std::vector<int64_t>& order) {
  SYNCGRAD_CHECK(!in_backward_, DistributedError,
                 "DistributedDataParallel: cannot rebuild the buckets during backward");
  const size_t n = params_.size();
  std::vector<char> seen(n, 0);
  std::vector<size_t> indices;
  for (int64_t index : order) {
    SYNCGRAD_CHECK(index >= 0 && static_cast<size_t>(index) < n && !seen[static_cast<size_t>(index)], ValueError,
                   "DistributedDataParallel: the saved bucket order is not a permutation of the model's ", n,
                   " parameters (entry ", index, "); it was saved for another model");
    seen[static_cast<size_t>(index)] = 1;
    indices.push_back(static_cast<size_t>(index));
  }
  SYNCGRAD_CHECK(indices.size() == n, ValueError, "DistributedDataParallel: the saved bucket order lists ",
                 indices.size(), " parameters but the model has ", n, "; it was saved for another model");
  rebuilt_ = true;
  if (options_.gradient_sharding) return;  // the buckets stay the ZeRO optimizer's segments
  rebuild(indices);
}

void Reducer::rebuild(const std::vector<size_t>& order) {
  rebuilt_order_.assign(order.begin(), order.end());
  std::vector<Tensor> old_views(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) old_views[i] = view_of(i);
  build_buckets(order);
  if (!options_.gradient_as_bucket_view) return;
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor grad = params_[i].second.grad();
    if (!grad.defined() || grad.data_ptr() != old_views[i].data_ptr()) continue;
    const Tensor& view = view_of(i);
    raw::copy_(view, grad);
    params_[i].second.set_grad(view);
  }
}

}  // namespace syncgrad::distributed
