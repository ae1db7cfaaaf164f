// --device and --backend for syncgrad-train (see training_device.h).
#include "tools/train/training_device.h"

#include "distributed/launch_env.h"
#include "tensor/backend.h"
#include "tensor/errors.h"

namespace syncgrad::train {

Device resolve_training_device(const TrainConfig& c) {
  if (c.device.is_cpu()) return Device(DeviceType::kCPU, 0);
  const std::string named = to_string(c.device);
  const distributed::LaunchEnv env = distributed::read_launch_env(false);
  const bool explicit_index = c.device.index.has_value();
  if (explicit_index && env.local_world_size > 1) {
    throw ValueError("--device " + named + " would put all " + std::to_string(env.local_world_size) +
                     " ranks of this node on one GPU; use --device cuda, and each rank takes cuda:LOCAL_RANK");
  }
  const Device device(DeviceType::kCUDA, c.device.index.value_or(env.local_rank));
  const int count = cuda_device_count();
  if (count == 0) {
    throw DeviceError("--device " + named + ": no usable CUDA device (" +
                      backend_unavailable_reason(DeviceType::kCUDA) + "); train on the CPU with --device cpu");
  }
  if (device.index >= count) {
    throw DeviceError("--device " + named + ": this rank needs " + device.str() + " but " +
                      std::to_string(count) + " CUDA device(s) are visible" +
                      (explicit_index ? std::string() : " (LOCAL_RANK " + std::to_string(env.local_rank) + ")") +
                      "; start at most " + std::to_string(count) + " ranks per node, or check CUDA_VISIBLE_DEVICES");
  }
  return device;
}

std::vector<Device> data_parallel_devices(Device first, int replicas) {
  const int count = cuda_device_count();
  if (first.index + replicas > count) {
    throw DeviceError("--parallel dp --dp-workers " + std::to_string(replicas) + " from " + first.str() +
                      " needs cuda:" + std::to_string(first.index) + " .. cuda:" +
                      std::to_string(first.index + replicas - 1) + ", but " + std::to_string(count) +
                      " CUDA device(s) are visible; lower --dp-workers");
  }
  std::vector<Device> devices;
  for (int i = 0; i < replicas; ++i) devices.emplace_back(DeviceType::kCUDA, first.index + i);
  return devices;
}

std::string resolve_backend(const TrainConfig& c, Device device) {
  if (c.backend == BackendChoice::kAuto) return device.is_cuda() ? "nccl" : "gloo";
  if (c.backend == BackendChoice::kGloo && device.is_cuda()) {
    throw ValueError("--backend gloo reduces CPU tensors, but --device " + to_string(c.device) +
                     " puts the gradients on " + device.str() + "; use --backend nccl (the default with a CUDA device)");
  }
  if (c.backend == BackendChoice::kNccl && device.is_cpu()) {
    throw ValueError("--backend nccl reduces CUDA tensors, but this run trains on the CPU; add --device cuda, or "
                     "use --backend gloo (the default on the CPU)");
  }
  return to_string(c.backend);
}

}  // namespace syncgrad::train
