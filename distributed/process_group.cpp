// The registry of process-group backends ("gloo", "nccl") and the ReduceOp names.
#include "distributed/process_group.h"

#include <map>
#include <mutex>

#include "distributed/errors.h"
#include "tensor/backend.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

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
