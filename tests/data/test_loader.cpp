// DataLoader behaviour: batches in sampler order whatever the worker count and finishing order, shuffling,
// drop_last, the prefetch window, option errors, per-worker seeds, deterministic augmentation, resumable state
// and the data-wait figure.
#include <doctest/doctest.h>

#include "syncgrad.h"
#include "tests/check_error.h"
#include "tests/data/loader_test_util.h"

using namespace syncgrad;
using data::Batch;
using data::DataLoader;
using data::DataLoaderOptions;
using syncgrad::testing::check_error;
using syncgrad::testing::CountingDataset;
using syncgrad::testing::epoch_targets;
using syncgrad::testing::epoch_values;
using syncgrad::testing::RandomizedDataset;
using syncgrad::testing::sleep_ms;

TEST_CASE("batches come out in sampler order for 0..3 workers, even when later batches finish first") {
  auto ds = std::make_shared<CountingDataset>(10);
  ds->delay = [](int64_t i) { sleep_ms(static_cast<int>(10 - i) * 3); };  // early samples are the slowest
  const std::vector<std::vector<int64_t>> expected = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}};
  for (int workers : {0, 1, 2, 3}) {
    CAPTURE(workers);
    DataLoader loader(ds, {.batch_size = 3, .num_workers = workers});
    CHECK(loader.num_batches() == 4);
    CHECK(epoch_targets(loader) == expected);
    DataLoader dropping(ds, {.batch_size = 3, .drop_last = true, .num_workers = workers});
    CHECK(epoch_targets(dropping) == std::vector<std::vector<int64_t>>(expected.begin(), expected.begin() + 3));
  }
}

TEST_CASE("default collation stacks data to (B, 4) f32 and 0-dim targets to (B) i64") {
  DataLoader loader(std::make_shared<CountingDataset>(5), {.batch_size = 2, .num_workers = 1});
  int64_t seen = 0;
  for (Batch& batch : loader) {
    CHECK(batch.data.dtype() == DType::f32);
    CHECK(batch.target.dtype() == DType::i64);
    CHECK(batch.data.size(1) == 4);
    CHECK(batch.target.dim() == 1);
    CHECK(batch.data.size(0) == batch.target.size(0));
    std::vector<float> values = to_vector<float>(batch.data);
    std::vector<int64_t> targets = to_vector<int64_t>(batch.target);
    for (size_t i = 0; i < values.size(); ++i) CHECK(values[i] == static_cast<float>(targets[i / 4]));
    seen += batch.target.numel();
  }
  CHECK(seen == 5);
}

TEST_CASE("shuffle: each epoch is RandomSampler(n, seed) at that epoch, identical for any worker count") {
  auto ds = std::make_shared<CountingDataset>(23);
  std::vector<std::vector<int64_t>> orders[2];
  for (int workers : {0, 2}) {
    DataLoader loader(ds, {.batch_size = 5, .shuffle = true, .num_workers = workers, .seed = 7});
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::vector<int64_t> flat;
      for (const auto& b : epoch_targets(loader)) flat.insert(flat.end(), b.begin(), b.end());
      data::RandomSampler reference(23, 7);
      reference.set_epoch(epoch);
      CHECK(flat == reference.indices());
      orders[epoch].push_back(flat);
    }
  }
  CHECK(orders[0][0] == orders[0][1]);
  CHECK(orders[0][0] != orders[1][0]);
}

TEST_CASE("option errors name the option and the value") {
  auto ds = std::make_shared<CountingDataset>(4);
  check_error<ValueError>(
      [&] { DataLoader(ds, {.shuffle = true, .sampler = std::make_shared<data::SequentialSampler>(4)}); },
      {"shuffle", "sampler"});
  check_error<ValueError>([&] { DataLoader(ds, {.batch_size = 0}); }, {"batch_size", "0"});
  check_error<ValueError>([&] { DataLoader(ds, {.num_workers = -1}); }, {"num_workers", "-1"});
  check_error<ValueError>([&] { DataLoader(ds, {.num_workers = 100000}); },
                          {"num_workers must be from 0 to 256 (worker threads), got 100000"});
  check_error<ValueError>([&] { DataLoader(ds, {.num_workers = 1, .prefetch_factor = 0}); }, {"prefetch_factor"});
  check_error<ValueError>([&] { DataLoader(ds, {.timeout = -1}); }, {"timeout"});
  check_error<ValueError>([&] { DataLoader(ds, {.persistent_workers = true}); }, {"persistent_workers"});
  check_error<ValueError>([&] { DataLoader(nullptr); }, {"dataset"});
  DataLoader loader(ds, {.batch_size = 2});
  check_error<ValueError>([&] { loader.load_state({0, 3}); }, {"batches_consumed 3", "2 batches"});
  check_error<ValueError>([&] { loader.load_state({-1, 0}); }, {"epoch -1"});
  auto it = loader.begin();
  check_error<ValueError>([&] { loader.begin(); }, {"still alive"});
}

TEST_CASE("at most prefetch_factor x num_workers batches are in flight ahead of the consumer") {
  auto ds = std::make_shared<CountingDataset>(40);
  DataLoader loader(ds, {.batch_size = 1, .num_workers = 2, .prefetch_factor = 2});
  int64_t taken = 0;
  for (Batch& batch : loader) {
    (void)batch;
    ++taken;
    // Workers may run ahead to batch taken - 1 + 4 (the window counts from the batch after the one held).
    for (int i = 0; i < 2000 && ds->max_fetched() < std::min<int64_t>(taken - 1 + 4, 39); ++i) sleep_ms(1);
    CHECK(ds->max_fetched() <= taken - 1 + 4);
    if (taken == 10) break;
  }
  CHECK(ds->max_fetched() == 13);
}

TEST_CASE("per-worker seeds derive from the base seed with Generator::split, and no worker in the caller") {
  auto ds = std::make_shared<CountingDataset>(32);
  ds->delay = [](int64_t) { sleep_ms(1); };
  DataLoader loader(ds, {.batch_size = 2, .num_workers = 2, .seed = 11});
  epoch_targets(loader);
  for (const auto& [id, seed] : ds->worker_seeds()) CHECK(seed == data::worker_seed(11, 0, id));
  CHECK(data::worker_seed(11, 0, 0) != data::worker_seed(11, 0, 1));
  CHECK(data::worker_seed(11, 0, 0) != data::worker_seed(11, 1, 0));
  CHECK(data::worker_seed(11, 0, 0) != data::worker_seed(12, 0, 0));
  CHECK(data::current_worker() == nullptr);
}

TEST_CASE("random transforms depend on (seed, epoch, index) only: same for 0 and 2 workers, new each epoch") {
  auto ds = std::make_shared<RandomizedDataset>(30);
  DataLoader a(ds, {.batch_size = 4, .shuffle = true, .num_workers = 0, .seed = 3});
  DataLoader b(ds, {.batch_size = 4, .shuffle = true, .num_workers = 2, .seed = 3});
  std::vector<float> a0 = epoch_values(a), b0 = epoch_values(b);
  CHECK(a0 == b0);
  CHECK(epoch_values(a) != a0);
}

TEST_CASE("state() and load_state() resume exactly where a run stopped, mid-epoch or at an epoch boundary") {
  auto ds = std::make_shared<RandomizedDataset>(37);
  const DataLoaderOptions options{.batch_size = 4, .shuffle = true, .num_workers = 2, .seed = 5};
  // Uninterrupted: three epochs.
  DataLoader straight(ds, options);
  std::vector<std::vector<float>> all;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (Batch& batch : straight) all.push_back(to_vector<float>(batch.data));
  }
  CHECK(straight.state() == data::LoaderState{3, 0});
  // Interrupted after 6 batches of epoch 1 (10 batches per epoch), resumed by a fresh loader.
  data::LoaderState saved;
  {
    DataLoader first(ds, options);
    epoch_values(first);
    int64_t n = 0;
    for (Batch& batch : first) {
      (void)batch;
      if (++n == 6) break;
    }
    saved = first.state();
  }
  CHECK(saved == data::LoaderState{1, 6});
  DataLoader resumed(ds, {.batch_size = 4, .shuffle = true, .num_workers = 0, .seed = 5});
  resumed.load_state(saved);
  std::vector<std::vector<float>> rest;
  for (int epoch = 1; epoch < 3; ++epoch) {
    for (Batch& batch : resumed) rest.push_back(to_vector<float>(batch.data));
  }
  REQUIRE(rest.size() == all.size() - 16);
  CHECK(std::equal(rest.begin(), rest.end(), all.begin() + 16));
  // After the last batch of an epoch was handed out, the state already names the next epoch.
  DataLoader edge(ds, options);
  int64_t n = 0;
  for (Batch& batch : edge) {
    (void)batch;
    if (++n == 10) break;
  }
  CHECK(edge.state() == data::LoaderState{1, 0});
}

TEST_CASE("leaving a loop early ends that epoch: the next loop is the following epoch") {
  auto ds = std::make_shared<CountingDataset>(12);
  DataLoader loader(ds, {.batch_size = 3, .shuffle = true, .num_workers = 2, .persistent_workers = true, .seed = 1});
  for (Batch& batch : loader) {
    (void)batch;
    break;
  }
  CHECK(loader.state() == data::LoaderState{0, 1});
  std::vector<int64_t> flat;
  for (const auto& b : epoch_targets(loader)) flat.insert(flat.end(), b.begin(), b.end());
  data::RandomSampler reference(12, 1);
  reference.set_epoch(1);
  CHECK(flat == reference.indices());
}

TEST_CASE("data-wait: the time the caller spent waiting for batches") {
  auto ds = std::make_shared<CountingDataset>(8);
  ds->delay = [](int64_t) { sleep_ms(5); };
  DataLoader in_caller(ds, {.batch_size = 2});
  epoch_targets(in_caller);
  CHECK(in_caller.data_wait_seconds() >= 0.035);
  CHECK(in_caller.batches_delivered() == 4);
  // The same 5 ms samples behind two workers and a consumer slower than both: once the first batch (and the
  // workers' start) has been waited for, the next three are ready when asked for. Compared with the in-caller
  // run's wait for one batch, not with a fixed bound, so that a loaded machine does not fail it.
  DataLoader prefetching(ds, {.batch_size = 2, .num_workers = 2});
  double after_first = -1;
  for (Batch& batch : prefetching) {
    (void)batch;
    if (after_first < 0) after_first = prefetching.data_wait_seconds();
    sleep_ms(40);  // a slow consumer
  }
  const double later = prefetching.data_wait_seconds() - after_first;
  MESSAGE("data-wait in the caller " << in_caller.data_wait_seconds() << " s for 4 batches; prefetching "
                                     << after_first << " s for the first, " << later << " s for the other 3");
  CHECK(prefetching.batches_delivered() == 4);
  CHECK(later < in_caller.data_wait_seconds() / 4);
}
