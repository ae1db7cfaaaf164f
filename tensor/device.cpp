// Device parsing and printing.
#include "tensor/device.h"

#include "tensor/errors.h"

namespace syncgrad {

Device Device::parse(const std::string& text) {
  if (text == "cpu") return Device(DeviceType::kCPU, 0);
  if (text == "cuda") return Device(DeviceType::kCUDA, 0);
  if (text.rfind("cuda:", 0) == 0) {
    std::string index = text.substr(5);
    bool digits = !index.empty() && index.size() < 4 &&
                  index.find_first_not_of("0123456789") == std::string::npos;
    if (digits) return Device(DeviceType::kCUDA, std::stoi(index));
  }
  throw ValueError("Device::parse: unknown device \"" + text + "\"; expected \"cpu\", \"cuda\" or \"cuda:N\"");
}

std::string Device::str() const {
  if (type == DeviceType::kCPU) return "cpu";
  return "cuda:" + std::to_string(index);
}

}  // namespace syncgrad
