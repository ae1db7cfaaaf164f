// The choices among syncgrad-train's options (--amp, --parallel, --optimizer, ...), as enums. Each has its one
// table of names here: the command line parses them, TrainConfig's JSON writes and reads them (the names are the
// JSON values, so checkpoints of any version load), and the progress lines print them. Parsing an unknown name
// throws ValueError naming the option, the value and the valid names, e.g.
//   --amp: unknown mode "fp8"; choose off, fp16 or bf16
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tensor/device.h"

namespace syncgrad::train {

// --amp: the forward pass under float16 autocast with a GradScaler, under bfloat16 autocast, or neither.
enum class AmpMode { kOff, kFp16, kBf16 };
// --parallel: ddp under syncgrad-launch else none (auto), one process (none), DataParallel threads (dp) or
// DistributedDataParallel (ddp).
enum class Parallelism { kAuto, kNone, kDataParallel, kDistributed };
enum class OptimizerKind { kSgd, kAdam, kAdamW };
// --backend: the device's (auto: nccl for CUDA, gloo for the CPU), gloo or nccl.
enum class BackendChoice { kAuto, kGloo, kNccl };
// --scale-lr: lr as given, or lr x world size reached linearly over the warm-up steps.
enum class LrScaling { kNone, kLinear };
// --lr-schedule: lr throughout, or annealed to 0 over --epochs.
enum class LrSchedule { kConstant, kCosine };

// --comm-hook: how DDP reduces a gradient bucket (distributed/comm_hook.h): "allreduce", "fp16", "bf16",
// "powersgd" (rank 1) or "powersgd:R".
struct CommHookChoice {
  enum class Kind { kAllreduce, kFp16, kBf16, kPowerSGD };
  Kind kind = Kind::kAllreduce;
  std::optional<int> powersgd_rank;  // "powersgd:R"; none for "powersgd" (rank 1)
  bool operator==(const CommHookChoice&) const = default;
};

// --device: "cpu", "cuda" (under syncgrad-launch cuda:LOCAL_RANK) or "cuda:N".
struct DeviceChoice {
  DeviceType type = DeviceType::kCPU;
  std::optional<int> index;  // "cuda:N"; none for "cpu" and "cuda"
  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool operator==(const DeviceChoice&) const = default;
};

AmpMode parse_amp_mode(const std::string& text);
Parallelism parse_parallelism(const std::string& text);
OptimizerKind parse_optimizer_kind(const std::string& text);
BackendChoice parse_backend_choice(const std::string& text);
LrScaling parse_lr_scaling(const std::string& text);
LrSchedule parse_lr_schedule(const std::string& text);
CommHookChoice parse_comm_hook_choice(const std::string& text);
DeviceChoice parse_device_choice(const std::string& text);

std::string to_string(AmpMode mode);
std::string to_string(Parallelism parallel);
std::string to_string(OptimizerKind optimizer);
std::string to_string(BackendChoice backend);
std::string to_string(LrScaling scaling);
std::string to_string(LrSchedule schedule);
std::string to_string(const CommHookChoice& hook);
std::string to_string(const DeviceChoice& device);

// The names of each enum's values in command-line order (for CLI11's IsMember and --help).
std::vector<std::string> amp_mode_names();
std::vector<std::string> parallelism_names();
std::vector<std::string> optimizer_kind_names();
std::vector<std::string> backend_choice_names();
std::vector<std::string> lr_scaling_names();
std::vector<std::string> lr_schedule_names();

}  // namespace syncgrad::train
