// The registry of process-group backends ("gloo", "nccl"), the ReduceOp names, the flat-buffer collectives
// expressed through the list ones (for backends without their own), and the group of non-members.
#include "distributed/process_group.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "distributed/debug_mode.h"
#include "distributed/errors.h"
#include "distributed/flight_recorder.h"
#include "distributed/rank_heartbeat.h"
#include "tensor/backend.h"
#include "tensor/check.h"
#include "tensor/ops/views.h"

namespace syncgrad::distributed {

ProcessGroup::~ProcessGroup() {
  if (flight_) flight_->stop();
  heartbeat::note_idle();
}

void ProcessGroup::set_up_debugging(std::shared_ptr<Store> store) {
  check_collectives_ = debug_mode_from_env() == DebugMode::kDetail;
  flight_ = FlightRecorder::create(FlightSettings::from_env(), std::move(store), rank_, size_, backend_name());
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "?";
}

namespace {

void check_flat_pair(const ProcessGroup& group, const Tensor& big, const Tensor& small, const char* collective,
                     const char* big_name, const char* small_name) {
  const std::string head = "rank " + std::to_string(group.rank()) + ": " + collective + ": ";
  SYNCGRAD_CHECK(big.defined() && small.defined(), ValueError, head, "the ", big.defined() ? small_name : big_name,
                 " is an undefined tensor");
  SYNCGRAD_CHECK(big.dtype() == small.dtype(), DTypeError, head, "the ", big_name, " is ", dtype_name(big.dtype()),
                 " but the ", small_name, " is ", dtype_name(small.dtype()), "; both must have the same dtype");
  SYNCGRAD_CHECK(big.device() == small.device(), DeviceError, head, "the ", big_name, " is on ", big.device().str(),
                 " but the ", small_name, " on ", small.device().str(), "; both must be on the same device");
  SYNCGRAD_CHECK(big.is_contiguous() && small.is_contiguous(), ValueError, head, "the ",
                 big.is_contiguous() ? small_name : big_name, " is not contiguous; pass tensor.contiguous()");
  SYNCGRAD_CHECK(big.numel() == small.numel() * group.size(), ValueError, head, "the ", big_name, " has ",
                 big.numel(), " elements but must have world size ", group.size(), " x ", small.numel(), " (the ",
                 small_name, "'s) = ", small.numel() * group.size(),
                 "; pad the flat buffer to a multiple of the world size");
}

// The size() blocks of `flat`, each viewed with `shape`.
std::vector<Tensor> blocks_of(const Tensor& flat, int count, const Shape& shape) {
  const int64_t n = flat.numel() / count;
  Tensor line = raw::view(flat, {flat.numel()});
  std::vector<Tensor> blocks;
  for (int r = 0; r < count; ++r) blocks.push_back(raw::view(raw::narrow(line, 0, r * n, n), shape));
  return blocks;
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, ProcessGroupFactory> factories;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

ProcessGroupFactory find_factory(const std::string& name) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  auto it = reg.factories.find(name);
  return it == reg.factories.end() ? ProcessGroupFactory{} : it->second;
}

std::string registered_names() {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  std::string names;
  for (const auto& [name, factory] : reg.factories) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

}  // namespace

std::shared_ptr<Work> ProcessGroup::allgather_into_tensor(const Tensor& output, const Tensor& input) {
  check_flat_pair(*this, output, input, "allgather_into_tensor", "output", "input");
  return allgather(blocks_of(output, size(), input.sizes()), input);
}

std::shared_ptr<Work> ProcessGroup::reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op) {
  check_flat_pair(*this, input, output, "reduce_scatter_tensor", "input", "output");
  return reduce_scatter(output, blocks_of(input, size(), output.sizes()), op);
}

void ProcessGroup::unsupported(const char* op) const {
  throw DistributedError("rank " + std::to_string(rank()) + ": " + op + " is not implemented by the " +
                         backend_name() +
                         " process group (it implements allreduce, broadcast, allgather, reduce_scatter, "
                         "allgather_into_tensor, reduce_scatter_tensor and barrier); run it on a \"gloo\" group "
                         "over CPU copies of the tensors");
}

std::shared_ptr<Work> ProcessGroup::gather(const std::vector<Tensor>&, const Tensor&, int) { unsupported("gather"); }
std::shared_ptr<Work> ProcessGroup::scatter(const Tensor&, const std::vector<Tensor>&, int) { unsupported("scatter"); }
std::shared_ptr<Work> ProcessGroup::all_to_all(const Tensor&, const Tensor&) { unsupported("all_to_all"); }
std::shared_ptr<Work> ProcessGroup::send(const Tensor&, int, uint32_t) { unsupported("send"); }
std::shared_ptr<Work> ProcessGroup::recv(const Tensor&, int, uint32_t) { unsupported("recv"); }
std::shared_ptr<ProcessGroup> ProcessGroup::new_group(const std::vector<int>&) { unsupported("new_group"); }

std::vector<int> checked_group_ranks(std::vector<int> ranks, int parent_size) {
  SYNCGRAD_CHECK(!ranks.empty(), ValueError, "new_group: no ranks given; list the ranks (0..", parent_size - 1,
                 ") of the new group");
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i) {
    SYNCGRAD_CHECK(ranks[i] >= 0 && ranks[i] < parent_size, ValueError, "new_group: rank ", ranks[i],
                   " is outside the parent group's ranks 0..", parent_size - 1);
    SYNCGRAD_CHECK(i == 0 || ranks[i] != ranks[i - 1], ValueError, "new_group: rank ", ranks[i],
                   " is listed twice; list each rank once");
  }
  return ranks;
}

namespace {

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return "[" + text + "]";
}

// The group of a rank outside new_group's ranks: it knows the members and refuses every collective.
class NonMemberGroup final : public ProcessGroup {
 public:
  NonMemberGroup(std::string backend, int parent_rank, std::vector<int> ranks, const ProcessGroupOptions& options)
      : ProcessGroup(-1, static_cast<int>(ranks.size()), options), backend_(std::move(backend)),
        parent_rank_(parent_rank), ranks_(std::move(ranks)) {}

  std::string backend_name() const override { return backend_; }
  bool is_member() const override { return false; }
  std::shared_ptr<Work> allreduce(const Tensor&, ReduceOp) override { refuse("allreduce"); }
  std::shared_ptr<Work> broadcast(const Tensor&, int) override { refuse("broadcast"); }
  std::shared_ptr<Work> allgather(const std::vector<Tensor>&, const Tensor&) override { refuse("allgather"); }
  std::shared_ptr<Work> reduce_scatter(const Tensor&, const std::vector<Tensor>&, ReduceOp) override {
    refuse("reduce_scatter");
  }
  std::shared_ptr<Work> barrier() override { refuse("barrier"); }
  std::shared_ptr<Work> allgather_into_tensor(const Tensor&, const Tensor&) override {
    refuse("allgather_into_tensor");
  }
  std::shared_ptr<Work> reduce_scatter_tensor(const Tensor&, const Tensor&, ReduceOp) override {
    refuse("reduce_scatter_tensor");
  }
  std::shared_ptr<Work> gather(const std::vector<Tensor>&, const Tensor&, int) override { refuse("gather"); }
  std::shared_ptr<Work> scatter(const Tensor&, const std::vector<Tensor>&, int) override { refuse("scatter"); }
  std::shared_ptr<Work> all_to_all(const Tensor&, const Tensor&) override { refuse("all_to_all"); }
  std::shared_ptr<Work> send(const Tensor&, int, uint32_t) override { refuse("send"); }
  std::shared_ptr<Work> recv(const Tensor&, int, uint32_t) override { refuse("recv"); }
  std::shared_ptr<ProcessGroup> new_group(const std::vector<int>&) override { refuse("new_group"); }

 private:
  [[noreturn]] void refuse(const char* op) const {
    throw DistributedError("rank " + std::to_string(parent_rank_) + ": " + op +
                           " on a sub-group this rank is not a member of (its ranks are " + ranks_text(ranks_) +
                           "); only members may call its collectives: check group->is_member() first");
  }

  std::string backend_;
  int parent_rank_;
  std::vector<int> ranks_;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_non_member_group(const std::string& backend, int parent_rank,
                                                    std::vector<int> ranks, const ProcessGroupOptions& options) {
  return std::make_shared<NonMemberGroup>(backend, parent_rank, std::move(ranks), options);
}

void register_process_group_backend(const std::string& name, ProcessGroupFactory factory) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  reg.factories[name] = std::move(factory);
}

std::shared_ptr<ProcessGroup> make_process_group(const std::string& backend, std::shared_ptr<Store> store,
                                                 int rank, int size, const ProcessGroupOptions& options) {
  // NCCL lives in the CUDA module, which registers it when it is loaded.
  if (backend == "nccl" && !find_factory(backend)) device_backend(DeviceType::kCUDA);
  ProcessGroupFactory factory = find_factory(backend);
  if (!factory) {
    std::string why;
    if (backend == "gloo") {
      why = "this build has no Gloo: install libgloo-dev and rebuild (scripts/setup.sh does both)";
    } else if (backend == "nccl") {
      why = "NCCL comes with the CUDA backend, which is unavailable: " +
            backend_unavailable_reason(DeviceType::kCUDA) + "; use backend \"gloo\" for CPU tensors";
    } else {
      why = "unknown backend name; use \"gloo\" (CPU tensors) or \"nccl\" (CUDA tensors)";
    }
    throw DistributedError("process group backend \"" + backend + "\" is not available (registered: " +
                           registered_names() + "): " + why);
  }
  SYNCGRAD_CHECK(size >= 1 && rank >= 0 && rank < size, RendezvousError, "process group: rank ", rank,
                 " is outside world size ", size, "; ranks are 0..WORLD_SIZE-1");
  return factory(std::move(store), rank, size, options);
}

}  // namespace syncgrad::distributed
