// Entry point of the CUDA conformance suite (tests/cuda/test_cuda_*.cpp). Without a usable CUDA device it
// prints why and exits with 77, which meson reports as SKIP (or 1 when $SYNCGRAD_TEST_REQUIRE_CUDA is set, as
// for the run against the emulated module, tests/cuda/emulation/).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tensor/backend.h"

int main(int argc, char** argv) {
  using namespace syncgrad;
  if (!cuda_is_available()) {
    const std::string reason = backend_unavailable_reason(DeviceType::kCUDA);
    if (std::getenv("SYNCGRAD_TEST_REQUIRE_CUDA") != nullptr) {
      std::printf("FAIL test_cuda_ops: SYNCGRAD_TEST_REQUIRE_CUDA is set but %s\n", reason.c_str());
      return 1;
    }
    std::printf("SKIP test_cuda_ops: %s\n", reason.c_str());
    std::fflush(stdout);
    return 77;  // meson: skipped
  }
  doctest::Context context(argc, argv);
  return context.run();
}
