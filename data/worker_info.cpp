// Seed derivation and the thread-local worker record.
#include "data/worker_info.h"

#include <limits>
#include <optional>

namespace syncgrad::data {
namespace {

constexpr uint64_t kWorkerStream = std::numeric_limits<uint64_t>::max();
thread_local std::optional<WorkerInfo> this_worker;

Generator epoch_generator(uint64_t base_seed, int64_t epoch) {
  return Generator(base_seed).split(static_cast<uint64_t>(epoch));
}

}  // namespace

Generator sample_generator(uint64_t base_seed, int64_t epoch, int64_t index) {
  return epoch_generator(base_seed, epoch).split(static_cast<uint64_t>(index));
}

uint64_t worker_seed(uint64_t base_seed, int64_t epoch, int worker) {
  return epoch_generator(base_seed, epoch).split(kWorkerStream).split(static_cast<uint64_t>(worker)).seed();
}

const WorkerInfo* current_worker() { return this_worker ? &*this_worker : nullptr; }

WorkerScope::WorkerScope(const WorkerInfo& info) { this_worker = info; }

WorkerScope::~WorkerScope() { this_worker.reset(); }

}  // namespace syncgrad::data
