// The name tables of syncgrad-train's choices and their parsing (see train_choices.h).
#include "tools/train/train_choices.h"

#include <array>
#include <stdexcept>

#include "tensor/errors.h"

namespace syncgrad::train {
namespace {

template <typename E>
struct Named {
  E value;
  const char* name;
};

constexpr std::array<Named<AmpMode>, 3> kAmpModes{
    {{AmpMode::kOff, "off"}, {AmpMode::kFp16, "fp16"}, {AmpMode::kBf16, "bf16"}}};
constexpr std::array<Named<Parallelism>, 4> kParallelisms{{{Parallelism::kAuto, "auto"},
                                                            {Parallelism::kNone, "none"},
                                                            {Parallelism::kDataParallel, "dp"},
                                                            {Parallelism::kDistributed, "ddp"}}};
constexpr std::array<Named<OptimizerKind>, 3> kOptimizers{
    {{OptimizerKind::kSgd, "sgd"}, {OptimizerKind::kAdam, "adam"}, {OptimizerKind::kAdamW, "adamw"}}};
constexpr std::array<Named<BackendChoice>, 3> kBackends{
    {{BackendChoice::kAuto, "auto"}, {BackendChoice::kGloo, "gloo"}, {BackendChoice::kNccl, "nccl"}}};
constexpr std::array<Named<LrScaling>, 2> kLrScalings{{{LrScaling::kNone, "none"}, {LrScaling::kLinear, "linear"}}};
constexpr std::array<Named<LrSchedule>, 2> kLrSchedules{
    {{LrSchedule::kConstant, "constant"}, {LrSchedule::kCosine, "cosine"}}};
// "powersgd" and "powersgd:R" share kPowerSGD; the rank is parsed separately.
constexpr std::array<Named<CommHookChoice::Kind>, 4> kCommHooks{{{CommHookChoice::Kind::kAllreduce, "allreduce"},
                                                                 {CommHookChoice::Kind::kFp16, "fp16"},
                                                                 {CommHookChoice::Kind::kBf16, "bf16"},
                                                                 {CommHookChoice::Kind::kPowerSGD, "powersgd"}}};
constexpr const char* kPowerSGDPrefix = "powersgd:";

template <typename E, size_t N>
std::vector<std::string> names(const std::array<Named<E>, N>& table) {
  std::vector<std::string> all;
  for (const Named<E>& entry : table) all.emplace_back(entry.name);
  return all;
}

// "a, b or c"
std::string listed(const std::vector<std::string>& choices) {
  std::string text;
  for (size_t i = 0; i < choices.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  }
  return text;
}

template <typename E, size_t N>
const Named<E>* find(const std::array<Named<E>, N>& table, const std::string& text) {
  for (const Named<E>& entry : table) {
    if (text == entry.name) return &entry;
  }
  return nullptr;
}

// `option` and `noun` make the error: `--amp: unknown mode "fp8"; choose off, fp16 or bf16`.
template <typename E, size_t N>
E parse(const std::array<Named<E>, N>& table, const std::string& text, const char* option, const char* noun) {
  if (const Named<E>* entry = find(table, text)) return entry->value;
  throw ValueError(std::string(option) + ": unknown " + noun + " \"" + text + "\"; choose " + listed(names(table)));
}

template <typename E, size_t N>
std::string name_of(const std::array<Named<E>, N>& table, E value) {
  for (const Named<E>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  throw ValueError("unnamed choice " + std::to_string(static_cast<int>(value)));  // an enum value out of range
}

// R of "powersgd:R", a positive integer.
int powersgd_rank(const std::string& text) {
  const std::string digits = text.substr(std::string(kPowerSGDPrefix).size());
  try {
    size_t used = 0;
    const int rank = std::stoi(digits, &used);
    if (used == digits.size() && rank >= 1) return rank;
  } catch (const std::exception&) {
  }
  throw ValueError("--comm-hook " + text + ": the rank after powersgd: must be a positive integer, e.g. powersgd:2");
}

}  // namespace

AmpMode parse_amp_mode(const std::string& text) { return parse(kAmpModes, text, "--amp", "mode"); }
Parallelism parse_parallelism(const std::string& text) { return parse(kParallelisms, text, "--parallel", "mode"); }
OptimizerKind parse_optimizer_kind(const std::string& text) {
  return parse(kOptimizers, text, "--optimizer", "optimizer");
}
BackendChoice parse_backend_choice(const std::string& text) { return parse(kBackends, text, "--backend", "backend"); }
LrScaling parse_lr_scaling(const std::string& text) { return parse(kLrScalings, text, "--scale-lr", "scaling"); }
LrSchedule parse_lr_schedule(const std::string& text) {
  return parse(kLrSchedules, text, "--lr-schedule", "schedule");
}

CommHookChoice parse_comm_hook_choice(const std::string& text) {
  if (text.rfind(kPowerSGDPrefix, 0) == 0) return {CommHookChoice::Kind::kPowerSGD, powersgd_rank(text)};
  if (const Named<CommHookChoice::Kind>* entry = find(kCommHooks, text)) return {entry->value, std::nullopt};
  std::vector<std::string> choices = names(kCommHooks);
  choices.emplace_back("powersgd:R");
  throw ValueError("--comm-hook: unknown comm hook \"" + text + "\"; choose " + listed(choices));
}

DeviceChoice parse_device_choice(const std::string& text) {
  Device device;
  try {
    device = Device::parse(text);
  } catch (const ValueError& e) {
    throw ValueError("--device: " + std::string(e.what()) + "; use cpu, cuda (one GPU per rank) or cuda:N");
  }
  if (device.is_cpu()) return {};
  const bool explicit_index = text.find(':') != std::string::npos;
  return {DeviceType::kCUDA, explicit_index ? std::optional<int>(device.index) : std::nullopt};
}

std::string to_string(AmpMode mode) { return name_of(kAmpModes, mode); }
std::string to_string(Parallelism parallel) { return name_of(kParallelisms, parallel); }
std::string to_string(OptimizerKind optimizer) { return name_of(kOptimizers, optimizer); }
std::string to_string(BackendChoice backend) { return name_of(kBackends, backend); }
std::string to_string(LrScaling scaling) { return name_of(kLrScalings, scaling); }
std::string to_string(LrSchedule schedule) { return name_of(kLrSchedules, schedule); }

std::string to_string(const CommHookChoice& hook) {
  if (hook.powersgd_rank) return kPowerSGDPrefix + std::to_string(*hook.powersgd_rank);
  return name_of(kCommHooks, hook.kind);
}

std::string to_string(const DeviceChoice& device) {
  if (device.is_cpu()) return "cpu";
  return device.index ? "cuda:" + std::to_string(*device.index) : "cuda";
}

std::vector<std::string> amp_mode_names() { return names(kAmpModes); }
std::vector<std::string> parallelism_names() { return names(kParallelisms); }
std::vector<std::string> optimizer_kind_names() { return names(kOptimizers); }
std::vector<std::string> backend_choice_names() { return names(kBackends); }
std::vector<std::string> lr_scaling_names() { return names(kLrScalings); }
std::vector<std::string> lr_schedule_names() { return names(kLrSchedules); }

}  // namespace syncgrad::train
