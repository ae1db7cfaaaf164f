// DataParallel: replicate (copy weights), scatter, parallel forward, gather; the gather node's backward runs
// the replicas' backward passes in parallel and sums their parameter gradients onto the model.
#include "distributed/data_parallel.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "autograd/node.h"
#include "tensor/check.h"
#include "tensor/memory_tag.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/join.h"
#include "tensor/ops/views.h"

namespace syncgrad::distributed {

// A fixed set of threads that run one job (body(i) for every i) at a time.
struct DataParallel::Workers {
  explicit Workers(int count) {
    for (int i = 1; i < count; ++i) threads.emplace_back([this, i] { loop(i); });
  }
  ~Workers() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    for (std::thread& t : threads) t.join();
  }

  // Runs body(0..n-1) (n <= threads + 1); rethrows the first exception after all finished.
  void run(int n, const std::function<void(int)>& body) {
    {
      std::lock_guard lock(mutex);
      job = &body;
      active = n;
      pending = n - 1;
      ++generation;
      errors.assign(n, nullptr);
    }
    wake.notify_all();
    try {
      body(0);
    } catch (...) {
      errors[0] = std::current_exception();
    }
    std::unique_lock lock(mutex);
    done.wait(lock, [&] { return pending == 0; });
    job = nullptr;
    for (const auto& error : errors) {
      if (error) std::rethrow_exception(error);
    }
  }

  void loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* body = nullptr;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping) return;
        seen = generation;
        if (index >= active) continue;
        body = job;
      }
      try {
        (*body)(index);
      } catch (...) {
        errors[index] = std::current_exception();
      }
      std::lock_guard lock(mutex);
      if (--pending == 0) done.notify_all();
    }
  }

  std::vector<std::thread> threads;
  std::mutex mutex;
  std::condition_variable wake, done;
  const std::function<void(int)>* job = nullptr;
  int active = 0, pending = 0;
  uint64_t generation = 0;
  bool stopping = false;
  std::vector<std::exception_ptr> errors;
};

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Tags the calling thread with worker i's memory tag while it lives, when tagging is on.
class WorkerMemoryTag {
 public:
  WorkerMemoryTag(bool enabled, int worker) {
    if (enabled) guard_.emplace(worker + 1);
  }

 private:
  std::optional<MemoryTagGuard> guard_;
};

// The gather's backward: splits the output gradient between the replicas, runs their backward passes in
// parallel, and returns each model parameter's gradient as the sum over replicas.
class DataParallelGatherBackward : public autograd::NamedNode<"DataParallelGatherBackward"> {
 public:
  DataParallelGatherBackward(std::vector<Tensor> outputs, std::vector<std::vector<Tensor>> replica_params,
                             std::vector<Device> devices, std::shared_ptr<DataParallel::Workers> workers,
                             std::shared_ptr<DataParallelStats> stats, bool memory_tags)
      : outputs_(std::move(outputs)),
        replica_params_(std::move(replica_params)),
        devices_(std::move(devices)),
        workers_(std::move(workers)),
        stats_(std::move(stats)),
        memory_tags_(memory_tags) {}

  autograd::GradList apply(autograd::GradList&& grads) override {
    SYNCGRAD_CHECK(!outputs_.empty(), AutogradError,
                   "DataParallel: backward ran twice through the same forward; the replicas' graphs are freed after "
                   "the first backward (retain_graph is not supported through DataParallel)");
    const Tensor& grad = grads[0];
    auto start = Clock::now();
    std::vector<Tensor> pieces;
    int64_t offset = 0;
    for (const Tensor& out : outputs_) {
      pieces.push_back(raw::contiguous(raw::narrow(grad, 0, offset, out.size(0))).to(out.device()));
      offset += out.size(0);
    }
    stats_->scatter_seconds += seconds_since(start);
    const int n = static_cast<int>(outputs_.size());
    start = Clock::now();
    workers_->run(n, [&](int i) {
      WorkerMemoryTag tag(memory_tags_, i);
      for (const Tensor& p : replica_params_[i]) p.set_grad(Tensor());
      autograd::backward({outputs_[i]}, {pieces[i]});
    });
    outputs_.clear();  // the replicas' graphs are spent
    stats_->parallel_backward_seconds = seconds_since(start);
    start = Clock::now();
    const size_t count = replica_params_[0].size();
    autograd::GradList result(count);
    for (size_t p = 0; p < count; ++p) {
      for (int i = 0; i < n; ++i) {
        const Tensor replica_grad = replica_params_[i][p].grad();
        if (!replica_grad.defined()) continue;
        const Tensor g = replica_grad.to(devices_[0]);
        result[p] = result[p].defined() ? raw::add(result[p], g) : raw::clone(g);
      }
    }
    stats_->reduce_seconds = seconds_since(start);
    return result;
  }

 private:
  std::vector<Tensor> outputs_;
  std::vector<std::vector<Tensor>> replica_params_;
  std::vector<Device> devices_;  // replica i's; gradients are summed on devices_[0]
  std::shared_ptr<DataParallel::Workers> workers_;
  std::shared_ptr<DataParallelStats> stats_;
  bool memory_tags_;
};

std::string describe_mismatch(const nn::StateDict& a, const nn::StateDict& b, const char* what) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i].first != b[i].first || a[i].second.sizes() != b[i].second.sizes()) {
      return std::string(what) + " #" + std::to_string(i) + " is " + a[i].first + " " +
             shape_str(a[i].second.sizes()) + " in the module but " + b[i].first + " " +
             shape_str(b[i].second.sizes()) + " in the replica";
    }
  }
  if (a.size() != b.size()) {
    return std::string("the replica has ") + std::to_string(b.size()) + " " + what + ", the module " +
           std::to_string(a.size());
  }
  return "";
}

}  // namespace

DataParallel::DataParallel(std::shared_ptr<nn::Module> module,
                           std::function<std::shared_ptr<nn::Module>()> make_replica, DataParallelOptions options)
    : nn::Module("DataParallel"),
      module_(std::move(module)),
      memory_tags_(options.memory_tags),
      stats_(std::make_shared<DataParallelStats>()) {
  SYNCGRAD_CHECK(module_, ValueError, "DataParallel: the module is null");
  SYNCGRAD_CHECK(options.num_workers >= 1, ValueError, "DataParallel: num_workers must be >= 1, got ",
                 options.num_workers);
  register_module("module", module_);
  const std::vector<Tensor> module_params = module_->parameters();
  const Device home = module_params.empty() ? kCPU : module_params[0].device();
  if (options.devices.empty()) {
    devices_.assign(static_cast<size_t>(options.num_workers), home);
  } else {
    devices_ = options.devices;
    for (size_t i = 0; i < devices_.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        SYNCGRAD_CHECK(devices_[i] != devices_[j], ValueError, "DataParallel: device ", devices_[i].str(),
                       " is listed twice; give each replica its own device");
      }
    }
    SYNCGRAD_CHECK(home == devices_[0], DeviceError, "DataParallel: the module is on ", home.str(),
                   " but devices[0] is ", devices_[0].str(), "; move it there first (module->to(devices[0]))");
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    std::shared_ptr<nn::Module> replica;
    {
      WorkerMemoryTag tag(memory_tags_, i);
      replica = make_replica();
      if (replica) replica->to(devices_[i]);
    }
    SYNCGRAD_CHECK(replica, ValueError, "DataParallel: make_replica returned null");
    std::string mismatch = describe_mismatch(module_->named_parameters(), replica->named_parameters(), "parameters");
    if (mismatch.empty()) {
      mismatch = describe_mismatch(module_->named_buffers(), replica->named_buffers(), "buffers");
    }
    SYNCGRAD_CHECK(mismatch.empty(), ValueError, "DataParallel: make_replica builds a different model: ", mismatch,
                   "; it must build the same architecture as the module");
    replicas_.push_back(std::move(replica));
  }
  workers_ = std::make_shared<Workers>(static_cast<int>(devices_.size()));
}

DataParallel::~DataParallel() = default;

void DataParallel::replicate() {
  NoGradGuard no_grad;
  const auto params = module_->named_parameters();
  const auto buffers = module_->named_buffers();
  for (auto& replica : replicas_) {
    const auto rp = replica->named_parameters();
    for (size_t i = 0; i < params.size(); ++i) raw::copy_(rp[i].second, params[i].second);
    const auto rb = replica->named_buffers();
    for (size_t i = 0; i < buffers.size(); ++i) raw::copy_(rb[i].second, buffers[i].second);
    replica->train(module_->is_training());
  }
}

Tensor DataParallel::forward(const Tensor& input) {
  SYNCGRAD_CHECK(input.dim() >= 1 && input.size(0) >= 1, ShapeError,
                 "DataParallel: the input needs a non-empty batch dimension, got ", shape_str(input.sizes()));
  DataParallelStats& stats = *stats_;
  stats = DataParallelStats{};
  auto start = Clock::now();
  replicate();
  stats.replicate_seconds = seconds_since(start);
  start = Clock::now();
  const int n = static_cast<int>(std::min<int64_t>(input.size(0), static_cast<int64_t>(replicas_.size())));
  const std::vector<Tensor> chunks = raw::chunk(input, n, 0);
  stats.scatter_seconds = seconds_since(start);
  std::vector<Tensor> outputs(n);
  const bool record = autograd::GradMode::is_enabled();
  start = Clock::now();
  workers_->run(n, [&](int i) {
    WorkerMemoryTag tag(memory_tags_, i);
    autograd::GradMode::set_enabled(record);  // grad mode is per thread: follow the caller's
    outputs[i] = replicas_[i]->forward(chunks[i].to(devices_[i]));
  });
  stats.parallel_forward_seconds = seconds_since(start);
  start = Clock::now();
  // Buffer updates (BatchNorm running statistics) of replica 0 are kept, as PyTorch keeps device 0's.
  {
    NoGradGuard no_grad;
    const auto buffers = module_->named_buffers();
    const auto rb = replicas_[0]->named_buffers();
    for (size_t i = 0; i < buffers.size(); ++i) raw::copy_(buffers[i].second, rb[i].second);
  }
  std::vector<Tensor> detached;
  for (const Tensor& out : outputs) detached.push_back(out.detach().to(devices_[0]));
  Tensor gathered = raw::cat(detached, 0);
  stats.gather_seconds = seconds_since(start);
  std::vector<Tensor> params = module_->parameters();
  if (!autograd::any_requires_grad(params)) return gathered;
  std::vector<std::vector<Tensor>> replica_params;
  for (int i = 0; i < n; ++i) replica_params.push_back(replicas_[i]->parameters());
  auto node = std::make_shared<DataParallelGatherBackward>(outputs, std::move(replica_params), devices_, workers_,
                                                           stats_, memory_tags_);
  autograd::record(node, params, {gathered});
  return gathered;
}

}  // namespace syncgrad::distributed
