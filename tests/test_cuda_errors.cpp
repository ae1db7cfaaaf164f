// CUDA error paths that run on every machine (no GPU needed): a CPU program loads no CUDA library, a CUDA
// request without a usable backend fails with a DeviceError that names the reason, bad device indices are
// refused, and a missing module is reported with its path. The GPU itself is tested by test_cuda.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "tensor/allocator.h"
#include "tensor/backend.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"

using namespace syncgrad;

namespace {

const Device kCuda0(DeviceType::kCUDA, 0);

// The message of the DeviceError `f` throws ("" if it throws none; other exceptions fail the test).
std::string device_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string mapped_cuda_libraries() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line)) {
    for (const char* lib : {"libcudart", "libcublas", "libcudnn", "libnccl", "libsyncgrad_cuda"}) {
      if (contains(line, lib) && !contains(found, lib)) found += std::string(lib) + " ";
    }
  }
  return found;
}

}  // namespace

// Runs first (doctest orders by file and line): nothing has asked for a CUDA device yet.
TEST_CASE("a CPU program maps no CUDA library until a CUDA device is used") {
  Tensor t = full({3, 4}, 2.5, {.dtype = DType::f32});
  CHECK(to_vector<float>(t)[11] == 2.5f);
  CHECK(mapped_cuda_libraries() == "");
}

TEST_CASE("without a usable CUDA backend every CUDA request fails with DeviceError naming the reason") {
  if (cuda_is_available()) {
    MESSAGE("a CUDA device is present (" << device_backend(DeviceType::kCUDA)->name()
                                         << "): the no-device paths are not reachable here");
    return;
  }
  const std::string reason = backend_unavailable_reason(DeviceType::kCUDA);
  MESSAGE("CUDA unavailable: " << reason);
  CHECK(contains(reason, "no CUDA backend"));
  CHECK(cuda_device_count() == 0);
  CHECK(device_backend(DeviceType::kCUDA) == nullptr);

  for (DType dtype : {DType::f32, DType::f16, DType::i64, DType::boolean}) {
    std::string msg = device_error_of([&] { full({4, 5}, 3.5, {.dtype = dtype, .device = kCuda0}); });
    CHECK_MESSAGE(contains(msg, "no CUDA backend"), msg);
  }
  std::string msg = device_error_of([] { empty({2}, {.device = kCuda0}); });
  CHECK_MESSAGE(contains(msg, "no CUDA backend"), msg);
  CHECK_MESSAGE(contains(msg, "cuda:0"), msg);
  msg = device_error_of([] { zeros({2, 2}, {.device = kCuda0}); });
  CHECK_MESSAGE(contains(msg, "no CUDA backend"), msg);

  Tensor host = full({2, 3}, 1.0, {.dtype = DType::f32});
  msg = device_error_of([&] { raw::to(host, kCuda0); });
  CHECK_MESSAGE(contains(msg, "no CUDA backend"), msg);
  msg = device_error_of([] { allocator_for(Device(DeviceType::kCUDA, 0)); });
  CHECK_MESSAGE(contains(msg, "no CUDA backend"), msg);

  // The CPU is unaffected by the failed requests.
  Tensor after = full({5}, 7, {.dtype = DType::i64});
  CHECK(to_vector<int64_t>(after)[4] == 7);
}

TEST_CASE("a CUDA device index out of range fails with DeviceError") {
  const int count = cuda_device_count();
  for (int index : {count, count + 7, -1}) {
    std::string msg = device_error_of([&] { empty({2}, {.device = Device(DeviceType::kCUDA, index)}); });
    INFO("device index " << index << ": " << msg);
    CHECK(!msg.empty());
    if (count > 0) {
      CHECK(contains(msg, "out of range"));
    } else {
      CHECK(contains(msg, "no CUDA backend"));
    }
  }
}

// Registered a second time in tests/meson.build with SYNCGRAD_CUDA_MODULE pointing at a file that does not
// exist; without that variable it only checks that the reason is consistent.
TEST_CASE("a CUDA module that cannot be loaded is reported with its path") {
  const char* module = std::getenv("SYNCGRAD_CUDA_MODULE");
  const std::string reason = backend_unavailable_reason(DeviceType::kCUDA);
  if (module == nullptr || std::ifstream(module).good()) {
    CHECK(reason.empty() == cuda_is_available());
    return;
  }
  MESSAGE("reason: " << reason);
  CHECK(!cuda_is_available());
  CHECK(contains(reason, "no CUDA backend"));
  CHECK(contains(reason, "could not load"));
  CHECK(contains(reason, module));
  std::string msg = device_error_of([] { full({4}, 1.0, {.device = kCuda0}); });
  CHECK_MESSAGE(contains(msg, "could not load"), msg);
}
