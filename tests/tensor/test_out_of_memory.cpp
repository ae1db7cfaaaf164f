// Out-of-memory errors name the bytes and the device, and blame the batch only inside a scope that says the
// allocation is the batch's (tensor/out_of_memory_context.h).
#include <doctest/doctest.h>

#include <string>

#include "tensor/allocator.h"
#include "tensor/errors.h"
#include "tensor/out_of_memory_context.h"

using namespace syncgrad;

namespace {

// More than any machine has: aligned_alloc refuses it at once.
constexpr size_t kHuge = size_t{1} << 60;

std::string failure_of_huge_allocation() {
  try {
    void* p = cpu_allocator().allocate(kHuge);
    cpu_allocator().deallocate(p, kHuge);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("an out-of-memory error names the bytes; no batch hint outside a batch's scope") {
  const std::string message = failure_of_huge_allocation();
  CHECK(message.find("out of memory allocating 1152921504606846976 bytes (1099511627776.0 MiB) of host memory") !=
        std::string::npos);
  CHECK(message.find("batch") == std::string::npos);
}

TEST_CASE("inside an OutOfMemoryContext the error says what the memory was for and gives its hint") {
  {
    OutOfMemoryContext outer("loading a dataset", "");
    OutOfMemoryContext inner("the forward and backward of a batch of 64 samples", "try a smaller --batch-size");
    const std::string message = failure_of_huge_allocation();
    CHECK(message.find("during the forward and backward of a batch of 64 samples (this process holds") !=
          std::string::npos);
    CHECK(message.find("; try a smaller --batch-size") != std::string::npos);
  }
  CHECK(failure_of_huge_allocation().find("during") == std::string::npos);
}
