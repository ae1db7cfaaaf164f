// The allreduce and compression communication hooks, and make_comm_hook's name lookup.
#include "distributed/comm_hook.h"

#include <map>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/ops/copy.h"

namespace syncgrad::distributed {

namespace {

class AllreduceHook : public CommHook {
 public:
  std::string name() const override { return "allreduce"; }
  std::shared_ptr<Work> launch(ProcessGroup& group, GradBucket& bucket) override {
    return group.allreduce(bucket.buffer, ReduceOp::kSum);
  }
};

// Reduces a lower-precision copy of the bucket; the copy of each bucket is kept for the next iteration.
class CompressHook : public CommHook {
 public:
  explicit CompressHook(DType wire) : wire_(wire) {}
  std::string name() const override { return wire_ == DType::f16 ? "fp16" : "bf16"; }

  std::shared_ptr<Work> launch(ProcessGroup& group, GradBucket& bucket) override {
    Tensor& compressed = compressed_[bucket.index];
    if (!compressed.defined() || compressed.numel() != bucket.buffer.numel() ||
        compressed.device() != bucket.buffer.device()) {
      compressed = raw::to(raw::clone(bucket.buffer), wire_);
    } else {
      raw::copy_(compressed, bucket.buffer);
    }
    return group.allreduce(compressed, ReduceOp::kSum);
  }

  void finish(ProcessGroup&, GradBucket& bucket) override { raw::copy_(bucket.buffer, compressed_[bucket.index]); }

 private:
  DType wire_;
  std::map<size_t, Tensor> compressed_;
};

}  // namespace

void CommHook::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state) {
  SYNCGRAD_CHECK(state.empty(), ValueError, "comm hook ", name(), " keeps no state, but the state to load has \"",
                 state.front().first, "\" (saved with another comm hook?)");
}

std::shared_ptr<CommHook> allreduce_hook() { return std::make_shared<AllreduceHook>(); }
std::shared_ptr<CommHook> fp16_compress_hook() { return std::make_shared<CompressHook>(DType::f16); }
std::shared_ptr<CommHook> bf16_compress_hook() { return std::make_shared<CompressHook>(DType::bf16); }

std::shared_ptr<CommHook> make_comm_hook(const std::string& name) {
  if (name == "allreduce") return allreduce_hook();
  if (name == "fp16") return fp16_compress_hook();
  if (name == "bf16") return bf16_compress_hook();
  if (name == "powersgd") return powersgd_hook();
  if (name.rfind("powersgd:", 0) == 0) {
    PowerSGDOptions options;
    try {
      size_t used = 0;
      options.matrix_approximation_rank = std::stoi(name.substr(9), &used);
      if (used != name.size() - 9 || options.matrix_approximation_rank < 1) throw std::invalid_argument(name);
    } catch (const std::exception&) {
      throw ValueError("comm hook \"" + name + "\": the rank after powersgd: must be a positive integer, e.g. "
                       "powersgd:2");
    }
    return powersgd_hook(options);
  }
  throw ValueError("unknown comm hook \"" + name + "\"; choose allreduce, fp16, bf16, powersgd or powersgd:R");
}

}  // namespace syncgrad::distributed
