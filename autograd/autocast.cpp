// Autocast's thread-local state (per device type: enabled and dtype; the scope depth), the per-scope cache
// of parameter casts, and the operand casting that the listed ops call.
#include "autograd/autocast.h"

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "autograd/grad_mode.h"
#include "autograd/ops/views.h"
#include "tensor/check.h"

namespace syncgrad {
namespace {

struct DeviceState {
  bool enabled = false;
  DType dtype = DType::bf16;
};

// A float32 parameter cast to a lower precision: valid while the parameter's version is unchanged and
// autograd recording is as it was (a cast made under NoGradGuard has no history to reuse).
struct CachedCast {
  std::shared_ptr<TensorImpl> source;  // keeps the key's address from being reused
  uint64_t version = 0;
  bool recorded = false;
  Tensor cast;
};

struct ThreadState {
  std::array<DeviceState, kNumDeviceTypes> devices = {DeviceState{false, DType::bf16},
                                                      DeviceState{false, DType::f16}};
  int depth = 0;  // live guards; the cache is emptied when the last one ends
  std::map<std::pair<const TensorImpl*, DType>, CachedCast> cache;
};

thread_local ThreadState state;

DeviceState& device_state(DeviceType device) { return state.devices[static_cast<size_t>(device)]; }

bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }

// Parameters (float32 leaves that require grad) are cast once per scope; anything else every time.
Tensor cast_to(const Tensor& t, DType dtype) {
  const bool parameter = t.dtype() == DType::f32 && t.is_leaf() && t.requires_grad();
  if (!parameter) return to(t, dtype);
  const bool recording = autograd::GradMode::is_enabled();
  CachedCast& entry = state.cache[{t.impl(), dtype}];
  if (!entry.cast.defined() || entry.version != t.version() || entry.recorded != recording) {
    entry = {t.impl_ptr(), t.version(), recording, to(t, dtype)};
  }
  return entry.cast;
}

}  // namespace

AutocastGuard::AutocastGuard(DeviceType device, DType dtype, bool enabled) : device_(device) {
  SYNCGRAD_CHECK(is_half(dtype), ValueError, "autocast: dtype ", dtype_name(dtype),
                 " is not a lower-precision type; use float16 or bfloat16");
  DeviceState& s = device_state(device);
  previous_enabled_ = s.enabled;
  previous_dtype_ = s.dtype;
  s = {enabled, dtype};
  ++state.depth;
}

AutocastGuard::~AutocastGuard() {
  device_state(device_) = {previous_enabled_, previous_dtype_};
  if (--state.depth == 0) state.cache.clear();
}

bool is_autocast_enabled(DeviceType device) { return device_state(device).enabled; }
DType autocast_dtype(DeviceType device) { return device_state(device).dtype; }
size_t autocast_cache_size() { return state.cache.size(); }

namespace autograd {

AutocastOperands autocast_operands(CastPolicy policy, std::initializer_list<const Tensor*> operands) {
  AutocastOperands result;
  SYNCGRAD_CHECK(operands.size() <= result.tensors.size(), ValueError, "autocast_operands: ", operands.size(),
                 " operands; at most ", result.tensors.size(), " are supported");
  const Tensor* first = nullptr;
  for (const Tensor* t : operands) {
    if (t->defined()) {
      first = t;
      break;
    }
  }
  if (first == nullptr || !device_state(first->device().type).enabled) return result;
  const DType target = policy == CastPolicy::fp32 ? DType::f32 : device_state(first->device().type).dtype;
  bool has_f64 = false;
  for (const Tensor* t : operands) has_f64 = has_f64 || (t->defined() && t->dtype() == DType::f64);
  if (has_f64 && policy == CastPolicy::lower_precision) return result;

  size_t i = 0;
  for (const Tensor* t : operands) {
    const bool eligible = t->defined() && (t->dtype() == DType::f32 || is_half(t->dtype()));
    if (eligible && t->dtype() != target) {
      result.tensors[i] = cast_to(*t, target);
      result.cast = true;
    } else {
      result.tensors[i] = *t;
    }
    ++i;
  }
  return result;
}

}  // namespace autograd
}  // namespace syncgrad
