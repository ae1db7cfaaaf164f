// DataParallel's step statistics (replicate, scatter, parallel regions, gather, reduce) and its per-worker
// memory attribution through memory tags.
#include <doctest/doctest.h>

#include "autograd/ops/loss.h"
#include "distributed/data_parallel.h"
#include "models/models.h"
#include "tensor/memory_tag.h"
#include "tensor/ops/factories.h"

using namespace syncgrad;
using namespace syncgrad::distributed;

TEST_CASE("DataParallel times its phases: forward's figures after forward, backward's after backward") {
  Generator gen(3);
  auto model = models::make_model("mlp", &gen);
  DataParallel dp(model, [] { return models::make_model("mlp"); }, {.num_workers = 2});
  CHECK(dp.last_stats().parallel_forward_seconds == 0);
  Tensor x = randn({8, 784}, {}, &gen);
  Tensor y = randint(0, 10, {8}, {.dtype = DType::i64}, &gen);
  Tensor loss = cross_entropy(dp(x), y);
  const DataParallelStats forward = dp.last_stats();
  CHECK(forward.replicate_seconds > 0);
  CHECK(forward.parallel_forward_seconds > 0);
  CHECK(forward.gather_seconds > 0);
  CHECK(forward.parallel_backward_seconds == 0);
  CHECK(forward.reduce_seconds == 0);
  loss.backward();
  const DataParallelStats& both = dp.last_stats();
  CHECK(both.parallel_backward_seconds > 0);
  CHECK(both.reduce_seconds > 0);
  CHECK(both.scatter_seconds > forward.scatter_seconds);  // the output gradient's pieces were added
  CHECK(both.communication_seconds() ==
        doctest::Approx(both.replicate_seconds + both.scatter_seconds + both.gather_seconds + both.reduce_seconds));
  // The next forward starts afresh.
  dp(x);
  CHECK(dp.last_stats().reduce_seconds == 0);
}

TEST_CASE("DataParallel with memory tags: each worker's replica and activations under its own tag") {
  Generator gen(4);
  // Tags 1 .. 3: run this test's workers alone so no other test allocates under them meanwhile.
  const size_t before[] = {memory_tag_stats(1).allocated_bytes, memory_tag_stats(2).allocated_bytes,
                           memory_tag_stats(3).allocated_bytes};
  {
    auto model = models::make_model("mlp", &gen);
    DataParallel dp(model, [] { return models::make_model("mlp"); }, {.num_workers = 3, .memory_tags = true});
    // The replicas' parameters (784*256 + 256 + 256*256 + 256 + 256*10 + 10 floats, ~1 MiB) sit under their tag.
    for (int tag = 1; tag <= 3; ++tag) CHECK(memory_tag_stats(tag).allocated_bytes - before[tag - 1] > 1000000);
    reset_memory_tag_peaks();
    Tensor loss = cross_entropy(dp(randn({30, 784}, {}, &gen)), randint(0, 10, {30}, {.dtype = DType::i64}, &gen));
    loss.backward();
    for (int tag = 1; tag <= 3; ++tag) {
      // Activations and gradients of each worker raised its peak above its parameters.
      CHECK(memory_tag_stats(tag).peak_allocated_bytes > memory_tag_stats(tag).allocated_bytes);
    }
  }
  for (int tag = 1; tag <= 3; ++tag) CHECK(memory_tag_stats(tag).allocated_bytes == before[tag - 1]);
}

TEST_CASE("DataParallel without memory tags leaves the tags alone") {
  Generator gen(5);
  const size_t before = memory_tag_stats(2).allocated_bytes;
  auto model = models::make_model("mlp", &gen);
  DataParallel dp(model, [] { return models::make_model("mlp"); }, {.num_workers = 2});
  dp(randn({4, 784}, {}, &gen));
  CHECK(memory_tag_stats(2).allocated_bytes == before);
}
