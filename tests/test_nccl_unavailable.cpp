// "nccl" where it cannot work, on every machine (no GPU needed): make_process_group("nccl", ...) fails with a
// DistributedError that says why -- no CUDA backend or no device (a machine without a GPU), or a CUDA module
// built without NCCL (checked against the emulated module, whose fake devices have no NCCL, when
// $SYNCGRAD_TEST_NCCL_STUB is set). On a machine with a GPU and NCCL these paths are unreachable and the test
// says so; test_cuda_nccl covers the group itself there.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "distributed/errors.h"
#include "distributed/hash_store.h"
#include "distributed/process_group.h"
#include "tensor/backend.h"
#include "tests/check_error.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::testing::check_error;

namespace {

std::shared_ptr<ProcessGroup> make_nccl_group() {
  ProcessGroupOptions options;
  options.device_index = 0;
  options.timeout = std::chrono::milliseconds{5000};
  return make_process_group("nccl", std::make_shared<HashStore>(std::chrono::milliseconds{1000}), 0, 1, options);
}

}  // namespace

TEST_CASE("make_process_group(\"nccl\") without a usable GPU says why and points to gloo") {
  if (std::getenv("SYNCGRAD_TEST_NCCL_STUB") != nullptr) return;  // the emulated module's case is below
  if (cuda_is_available()) {
    MESSAGE("a CUDA device is present (" << device_backend(DeviceType::kCUDA)->name()
                                         << "): the no-device path is not reachable here");
    return;
  }
  MESSAGE("CUDA unavailable: " << backend_unavailable_reason(DeviceType::kCUDA));
  check_error<DistributedError>([] { make_nccl_group(); },
                                {"\"nccl\" is not available", "no CUDA backend", "\"gloo\" for CPU tensors"});
  // The same answer the second time (the module is loaded once; the reason is kept).
  check_error<DistributedError>([] { make_nccl_group(); }, {"\"nccl\" is not available", "no CUDA backend"});
}

TEST_CASE("a CUDA module built without NCCL reports that NCCL is missing and how to get it") {
  if (std::getenv("SYNCGRAD_TEST_NCCL_STUB") == nullptr) return;  // run against the emulated module only
  REQUIRE_MESSAGE(cuda_is_available(), backend_unavailable_reason(DeviceType::kCUDA));
  check_error<DistributedError>([] { make_nccl_group(); },
                                {"rank 0", "\"nccl\" is not available", "built without NCCL", "rebuild", "gloo"});
}
