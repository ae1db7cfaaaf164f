// --device and --backend for syncgrad-train (see training_device.h).
#include "tools/train/training_device.h"

#include "distributed/launch_env.h"
#include "tensor/backend.h"
#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::train {

Device resolve_training_device(const TrainConfig& c) {
  if (c.device.is_cpu()) return Device(DeviceType::kCPU, 0);
  const std::string named = to_string(c.device);
  const distributed::LaunchEnv env = distributed::read_launch_env(false);
  const bool explicit_index = c.device.index.has_value();
  SYNCGRAD_CHECK(!explicit_index || env.local_world_size <= 1, ValueError, "--device ", named, " would put all ",
                 env.local_world_size,
                 " ranks of this node on one GPU; use --device cuda, and each rank takes cuda:LOCAL_RANK");
  const Device device(DeviceType::kCUDA, c.device.index.value_or(env.local_rank));
  const int count = cuda_device_count();
  SYNCGRAD_CHECK(count != 0, DeviceError, "--device ", named, ": no usable CUDA device (",
                 backend_unavailable_reason(DeviceType::kCUDA), "); train on the CPU with --device cpu");
  SYNCGRAD_CHECK(device.index < count, DeviceError, "--device ", named, ": this rank needs ", device.str(), " but ",
                 count, " CUDA device(s) are visible",
                 (explicit_index ? std::string() : " (LOCAL_RANK " + std::to_string(env.local_rank) + ")"),
                 "; start at most ", count, " ranks per node, or check CUDA_VISIBLE_DEVICES");
  return device;
}

std::vector<Device> data_parallel_devices(Device first, int replicas) {
  const int count = cuda_device_count();
  SYNCGRAD_CHECK(first.index + replicas <= count, DeviceError, "--parallel dp --dp-workers ", replicas, " from ",
                 first.str(), " needs cuda:", first.index, " .. cuda:", first.index + replicas - 1, ", but ", count,
                 " CUDA device(s) are visible; lower --dp-workers");
  std::vector<Device> devices;
  for (int i = 0; i < replicas; ++i) devices.emplace_back(DeviceType::kCUDA, first.index + i);
  return devices;
}

std::string resolve_backend(const TrainConfig& c, Device device) {
  if (c.backend == BackendChoice::kAuto) return device.is_cuda() ? "nccl" : "gloo";
  SYNCGRAD_CHECK(c.backend != BackendChoice::kGloo || !device.is_cuda(), ValueError,
                 "--backend gloo reduces CPU tensors, but --device ", to_string(c.device), " puts the gradients on ",
                 device.str(), "; use --backend nccl (the default with a CUDA device)");
  SYNCGRAD_CHECK(c.backend != BackendChoice::kNccl || !device.is_cpu(), ValueError,
                 "--backend nccl reduces CUDA tensors, but this run trains on the CPU; add --device cuda, or use "
                 "--backend gloo (the default on the CPU)");
  return to_string(c.backend);
}

}  // namespace syncgrad::train
