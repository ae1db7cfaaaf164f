// Memory tags: bytes allocated under a thread's tag are counted for it until freed on any thread, with a peak;
// untagged threads count nothing; guards nest and restore; bad tags are refused.
#include <doctest/doctest.h>

#include <thread>

#include "tensor/memory_tag.h"
#include "tensor/ops/factories.h"
#include "tests/check_error.h"

using namespace syncgrad;

TEST_CASE("memory tags count a thread's allocations until they are freed, wherever that happens") {
  constexpr int kTag = 201;  // far from the tags DataParallel uses in other tests
  const size_t before = memory_tag_stats(kTag).allocated_bytes;
  Tensor made_elsewhere;
  std::thread worker([&] {
    MemoryTagGuard tag(kTag);
    CHECK(current_memory_tag() == kTag);
    made_elsewhere = zeros({1024, 256});  // 1 MiB
  });
  worker.join();
  CHECK(current_memory_tag() == 0);
  CHECK(memory_tag_stats(kTag).allocated_bytes == before + (1u << 20));
  reset_memory_tag_peaks();
  CHECK(memory_tag_stats(kTag).peak_allocated_bytes == before + (1u << 20));
  made_elsewhere = Tensor();  // freed on this (untagged) thread: still uncounted from its tag
  CHECK(memory_tag_stats(kTag).allocated_bytes == before);
  CHECK(memory_tag_stats(kTag).peak_allocated_bytes == before + (1u << 20));
  {
    Tensor untagged = zeros({1024, 256});
    CHECK(memory_tag_stats(kTag).allocated_bytes == before);
  }
}

TEST_CASE("memory tag guards nest and refuse tags out of range") {
  {
    MemoryTagGuard outer(202);
    {
      MemoryTagGuard inner(203);
      CHECK(current_memory_tag() == 203);
    }
    CHECK(current_memory_tag() == 202);
  }
  CHECK(current_memory_tag() == 0);
  testing::check_error<ValueError>([] { MemoryTagGuard bad(kMaxMemoryTags); }, {"tag", "outside"});
  testing::check_error<ValueError>([] { memory_tag_stats(-1); }, {"-1", "outside"});
}
