// Where a tensor's bytes live: the host (kCPU) or one CUDA device (kCUDA, index).
#pragma once

#include <cstdint>
#include <string>

namespace syncgrad {

enum class DeviceType : uint8_t { kCPU = 0, kCUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
  // Parses "cpu", "cuda", "cuda:1"; throws ValueError naming the text otherwise.
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool is_cuda() const { return type == DeviceType::kCUDA; }
  std::string str() const;  // "cpu" or "cuda:0"
  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr Device kCPU{DeviceType::kCPU, 0};

}  // namespace syncgrad
