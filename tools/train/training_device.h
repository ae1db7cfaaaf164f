// Where syncgrad-train computes (--device) and how its ranks talk (--backend). Under syncgrad-launch a rank
// given --device cuda takes cuda:LOCAL_RANK, as with PyTorch's launchers; the backend follows the device
// (gloo for CPU tensors, nccl for CUDA tensors) unless --backend names one.
#pragma once

#include <string>
#include <vector>

#include "tensor/device.h"
#include "tools/train/train_config.h"

namespace syncgrad::train {

// --device resolved for this process: "cpu", "cuda" (cuda:LOCAL_RANK) or "cuda:N". ValueError for cuda:N when
// several ranks would share it; DeviceError naming the reason when CUDA is
// not usable here or the index is beyond the devices present.
Device resolve_training_device(const TrainConfig& config);

// The GPUs of --parallel dp --device cuda[:N]: `replicas` devices from `first` on; DeviceError when there are
// not that many.
std::vector<Device> data_parallel_devices(Device first, int replicas);

// --backend resolved for `device`, by name: auto picks "nccl" for CUDA and "gloo" for the CPU; ValueError when
// the named backend cannot carry tensors on that device.
std::string resolve_backend(const TrainConfig& config, Device device);

}  // namespace syncgrad::train
