// The shared oneDNN engine, the per-thread streams and the per-thread buffers of onednn_context.h.
#include "tensor/cpu/onednn_context.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::cpu::onednn {
namespace {

constexpr int kSlots = 8;
constexpr size_t kAlignment = 64;

}  // namespace

dnnl::engine& engine() {
  static dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dnnl::memory thread_memory(const dnnl::memory::desc& desc, int slot) {
  SYNCGRAD_CHECK(slot >= 0 && slot < kSlots, Error, "oneDNN thread memory: slot ", slot, " is not in [0, ", kSlots,
                 ")");
  thread_local std::array<std::vector<uint8_t>, kSlots> buffers;
  std::vector<uint8_t>& buffer = buffers[slot];
  const size_t bytes = desc.get_size() + kAlignment;
  if (buffer.size() < bytes) buffer.resize(bytes);
  uint8_t* aligned = buffer.data() + (kAlignment - reinterpret_cast<uintptr_t>(buffer.data()) % kAlignment);
  return dnnl::memory(desc, engine(), aligned);
}

void throw_run_failure(const dnnl::error& e, const char* what, bool bfloat16) {
  throw DeviceError(std::string("oneDNN ") + what + " failed: " + e.what() + " (status " +
                    std::to_string(static_cast<int>(e.status)) + "); " +
                    (bfloat16 ? "SYNCGRAD_CPU_BF16_ONEDNN=0 runs bfloat16 on syncgrad's own kernels"
                              : "is the machine out of memory?"));
}

}  // namespace syncgrad::cpu::onednn
