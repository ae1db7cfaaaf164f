// Device checks that need a second device: a stand-in "CUDA" backend over host memory is registered for the
// duration of a test (only where no real CUDA device exists), so cross-device errors can be exercised here.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

#include "syncgrad.h"

using namespace syncgrad;

namespace {

class HostBackedAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override { return std::aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64); }
  void deallocate(void* ptr, size_t) override { std::free(ptr); }
  AllocatorStats stats() const override { return {}; }
  void reset_peak() override {}
  void empty_cache() override {}
};

class StandInBackend final : public DeviceBackend {
 public:
  std::string name() const override { return "stand-in"; }
  int device_count() const override { return 2; }
  Allocator& allocator(int) override { return allocator_; }
  void copy_bytes(void* dst, Device, const void* src, Device, size_t nbytes, bool) override {
    std::memcpy(dst, src, nbytes);
  }
  void synchronize(int) override {}

 private:
  HostBackedAllocator allocator_;
};

// Installs the stand-in for one scope; restores "no backend" afterwards.
struct StandInScope {
  StandInBackend backend;
  StandInScope() {
    device_backend(DeviceType::kCUDA);  // let the real module load attempt happen first
    register_device_backend(DeviceType::kCUDA, &backend);
  }
  ~StandInScope() { register_device_backend(DeviceType::kCUDA, nullptr); }
};

}  // namespace

TEST_CASE("ops on tensors of different devices name the op and both devices") {
  if (cuda_is_available()) {
    MESSAGE("skipped: a real CUDA device is present; the CUDA suite covers this");
    return;
  }
  StandInScope scope;
  Tensor host = ones({2});
  Tensor device = empty({2}, {.device = Device(DeviceType::kCUDA, 1)});
  CHECK(device.device().str() == "cuda:1");
  try {
    raw::add(host, device);
    FAIL("expected DeviceError");
  } catch (const DeviceError& e) {
    std::string msg = e.what();
    CHECK(msg.find("add") != std::string::npos);
    CHECK(msg.find("cpu") != std::string::npos);
    CHECK(msg.find("cuda:1") != std::string::npos);
  }
  CHECK_THROWS_AS(empty({2}, {.device = Device(DeviceType::kCUDA, 5)}), DeviceError);
  // Cross-device copies go through the backend's byte copy.
  Tensor moved = raw::to(raw::to(tensor({1.f, 2.f, 3.f}), Device(DeviceType::kCUDA, 0)), kCPU);
  CHECK(to_vector<float>(moved) == std::vector<float>{1, 2, 3});
}
