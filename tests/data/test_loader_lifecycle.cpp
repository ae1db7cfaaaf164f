// DataLoader lifecycle: worker errors re-thrown in the caller with worker id and sample index, early exit and
// destruction mid-epoch, timeouts, buffer reuse that never invalidates held batches, pinned memory, and the
// DistributedSampler epoch guard. These also run under ThreadSanitizer and AddressSanitizer (tests/meson.build).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>

#include "syncgrad.h"
#include "tests/check_error.h"
#include "tests/data/loader_test_util.h"

using namespace syncgrad;
using data::Batch;
using data::DataLoader;
using syncgrad::testing::CaptureStderr;
using syncgrad::testing::check_error;
using syncgrad::testing::count_lines;
using syncgrad::testing::CountingDataset;
using syncgrad::testing::epoch_targets;
using syncgrad::testing::sleep_ms;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("a worker's exception is re-thrown in the caller with its type, the worker id and the sample index") {
  auto ds = std::make_shared<CountingDataset>(20);
  ds->fail_at = 13;
  for (int workers : {0, 2}) {
    CAPTURE(workers);
    DataLoader loader(ds, {.batch_size = 4, .num_workers = workers});
    std::vector<int64_t> seen;
    check_error<ValueError>(
        [&] {
          for (Batch& batch : loader) seen.push_back(batch.target.size(0));
        },
        {workers == 0 ? "main thread" : "DataLoader worker", "sample 13", "batch 3 of epoch 0", "bad record 13"});
    CHECK(seen.size() == 3);  // batches before the failing one arrive first, in order
  }
  auto plain = std::make_shared<CountingDataset>(8);
  plain->std_fail_at = 5;
  DataLoader loader(plain, {.batch_size = 2, .num_workers = 1});
  check_error<data::WorkerError>([&] { epoch_targets(loader); }, {"worker 0", "sample 5", "plain failure"});
  plain->std_fail_at = -1;
  CHECK(epoch_targets(loader).size() == 4);  // the loader is usable again afterwards
}

TEST_CASE("collation errors name the example, both shapes and the batch") {
  auto ds = std::make_shared<CountingDataset>(6);
  DataLoader loader(ds, {.batch_size = 3, .num_workers = 1, .collate = [](const std::vector<data::Example>& e,
                                                                            data::BufferPool& pool) -> Batch {
                           std::vector<data::Example> copy = e;
                           copy[1].data = zeros({5});
                           return data::default_collate(copy, pool);
                         }});
  check_error<ShapeError>([&] { epoch_targets(loader); }, {"collating batch 0", "example 1", "[5]", "[4]"});
}

TEST_CASE("breaking out early and destroying the loader mid-epoch never hang") {
  auto ds = std::make_shared<CountingDataset>(200);
  ds->delay = [](int64_t) { sleep_ms(2); };
  auto start = std::chrono::steady_clock::now();
  for (bool persistent : {false, true}) {
    DataLoader loader(ds, {.batch_size = 4, .num_workers = 3, .prefetch_factor = 4, .persistent_workers = persistent});
    for (int epoch = 0; epoch < 3; ++epoch) {
      int n = 0;
      for (Batch& batch : loader) {
        (void)batch;
        if (++n == 2) break;
      }
    }
    auto it = loader.begin();  // destroyed below together with the loader, mid-epoch
    CHECK(it != loader.end());
  }
  {
    auto holder = std::make_unique<DataLoader>(ds, data::DataLoaderOptions{.batch_size = 4, .num_workers = 2});
    Batch kept;
    for (Batch& batch : *holder) {
      kept = batch;
      break;
    }
    holder.reset();  // the batch outlives the loader and its pool
    CHECK(to_vector<int64_t>(kept.target) == std::vector<int64_t>{0, 1, 2, 3});
  }
  CHECK(seconds_since(start) < 10);
}

TEST_CASE("a timeout raises TimeoutError naming the batch and the worker, and shuts down promptly") {
  auto ds = std::make_shared<CountingDataset>(8);
  ds->delay = [](int64_t i) {
    if (i == 2) sleep_ms(400);
  };
  auto start = std::chrono::steady_clock::now();
  {
    DataLoader loader(ds, {.batch_size = 1, .num_workers = 2, .timeout = 0.05});
    check_error<data::TimeoutError>([&] { epoch_targets(loader); }, {"batch 2", "worker", "timeout"});
  }
  CHECK(seconds_since(start) < 2);
  DataLoader patient(ds, {.batch_size = 1, .num_workers = 2, .timeout = 5});
  CHECK(epoch_targets(patient).size() == 8);
}

TEST_CASE("collation reuses pooled buffers and never overwrites a batch the caller still holds") {
  auto ds = std::make_shared<CountingDataset>(64);
  DataLoader loader(ds, {.batch_size = 8, .num_workers = 2});
  for (int epoch = 0; epoch < 4; ++epoch) epoch_targets(loader);
  data::BufferPoolStats stats = loader.buffer_stats();
  // Steady state: at most window (2 x 2) + 1 held batches of 2 blocks exist at once; all else is reuse.
  CHECK(stats.fresh_allocations <= 2 * (4 + 1));
  CHECK(stats.reuses == 4 * 8 * 2 - stats.fresh_allocations);
  CHECK(stats.blocks_in_use == 0);

  std::vector<Batch> held;
  for (Batch& batch : loader) held.push_back(batch);  // keep every batch of the epoch alive
  for (size_t b = 0; b < held.size(); ++b) {
    std::vector<int64_t> targets = to_vector<int64_t>(held[b].target);
    for (size_t i = 0; i < targets.size(); ++i) CHECK(targets[i] == static_cast<int64_t>(b * 8 + i));
  }
  Tensor view = held[0].data.reshape({32});
  held.clear();
  epoch_targets(loader);
  CHECK(to_vector<float>(view)[31] == 7.0f);  // a view keeps its block out of the pool
}

TEST_CASE("pin_memory: pinned host buffers with a CUDA device, else plain memory and one line on stderr") {
  auto ds = std::make_shared<CountingDataset>(8);
  if (std::getenv("SYNCGRAD_TEST_REQUIRE_CUDA") != nullptr) {
    REQUIRE_MESSAGE(cuda_is_available(), backend_unavailable_reason(DeviceType::kCUDA));
  }
  if (cuda_is_available()) {
    DataLoader loader(ds, {.batch_size = 4, .num_workers = 1, .pin_memory = true});
    CHECK(loader.pinned());
    for (Batch& batch : loader) {
      Tensor on_device = batch.data.to(Device(DeviceType::kCUDA, 0), /*non_blocking=*/true);
      CHECK(to_vector<float>(on_device) == to_vector<float>(batch.data));
    }
    return;
  }
  CaptureStderr capture;
  DataLoader loader(ds, {.batch_size = 4, .num_workers = 1, .pin_memory = true});
  CHECK_FALSE(loader.pinned());
  CHECK(epoch_targets(loader).size() == 2);
  DataLoader another(ds, {.batch_size = 4, .pin_memory = true});
  epoch_targets(another);
  CHECK(count_lines(capture.text()) == 1);  // once per process (this is the test binary's first pinning loader)
  CHECK(capture.text().find("pin_memory") != std::string::npos);
}

TEST_CASE("a DistributedSampler iterated again without set_epoch warns once; auto_set_epoch advances it") {
  auto ds = std::make_shared<CountingDataset>(16);
  auto sampler = std::make_shared<data::DistributedSampler>(16, 2, 0, true, 4);
  {
    CaptureStderr capture;
    DataLoader loader(ds, {.batch_size = 4, .sampler = sampler, .num_workers = 1});
    auto first = epoch_targets(loader);
    CHECK(capture.text().empty());
    CHECK(epoch_targets(loader) == first);  // same order: the mistake the warning is about
    epoch_targets(loader);
    CHECK(count_lines(capture.text()) == 1);
    CHECK(capture.text().find("set_epoch") != std::string::npos);
    CHECK(capture.text().find("auto_set_epoch") != std::string::npos);
    sampler->set_epoch(1);
    epoch_targets(loader);
    CHECK(count_lines(capture.text()) == 1);
  }
  CaptureStderr capture;
  auto fresh = std::make_shared<data::DistributedSampler>(16, 2, 0, true, 4);
  DataLoader loader(ds, {.batch_size = 4, .sampler = fresh, .num_workers = 1, .auto_set_epoch = true});
  auto first = epoch_targets(loader);
  CHECK(epoch_targets(loader) != first);
  CHECK(fresh->epoch() == 1);
  CHECK(capture.text().empty());
}
