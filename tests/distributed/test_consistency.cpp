// The cross-rank agreement checks between 2 real processes: settings that differ fail on every rank naming the
// first difference with both values (a value, a missing setting, the count of differences), agreeing settings
// pass; a DistributedSampler's seed / dataset size / drop_last and a sampler built for another rank; an
// optimizer's kind and param-group options.
#include <doctest/doctest.h>

#include <cmath>

#include "distributed/consistency.h"
#include "distributed/errors.h"
#include "nn/linear.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "tests/distributed/multiprocess.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::test::expect;
using syncgrad::test::expect_all_ok;
using syncgrad::test::report;
using syncgrad::test::run_job;

namespace {

// Runs check(rank) on 2 ranks; expects every rank to fail with a DesyncError containing each of `texts`.
void expect_desync_on_every_rank(const std::function<void(int)>& check, const std::vector<std::string>& texts) {
  auto outcomes = run_job(2, [&](int rank) {
    init_process_group(test::quick_init());
    try {
      check(rank);
    } catch (const DesyncError& e) {
      report(std::string("DesyncError: ") + e.what());
      return;
    }
    throw std::runtime_error("no DesyncError");
  });
  expect_all_ok(outcomes);
  for (const auto& outcome : outcomes) {
    INFO(outcome.report);
    for (const std::string& text : texts) CHECK(outcome.report.find(text) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("settings that differ fail on every rank naming the first difference with both values") {
  expect_desync_on_every_rank(
      [](int rank) {
        check_same_on_all_ranks(default_group(),
                                {{"epochs", "3"}, {"lr", rank == 0 ? "0.05" : "0.1"}, {"seed", rank == 0 ? "1" : "2"}},
                                "my_loop", "pass the same flags");
      },
      {"my_loop: the ranks disagree: rank 1 has lr 0.1, rank 0 has 0.05 (2 settings differ in all); pass the same "
       "flags"});
}

TEST_CASE("a setting missing on one rank is named") {
  expect_desync_on_every_rank(
      [](int rank) {
        Settings settings = {{"lr", "0.05"}};
        if (rank == 0) settings.emplace_back("dir", "");
        check_same_on_all_ranks(default_group(), settings, "my_loop");
      },
      {"rank 1 has no dir, rank 0 has dir \"\" (rank 1 has 1 settings, rank 0 has 2)",
       "start every rank with the same settings"});
}

TEST_CASE("agreeing settings, samplers and optimizers pass") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(test::quick_init());
    check_same_on_all_ranks(default_group(), {{"lr", setting_text(0.05)}, {"shuffle", setting_text(true)}}, "loop");
    data::DistributedSampler sampler(1000, 2, rank, true, 7);
    check_sampler_agrees(default_group(), sampler);
    nn::Linear layer(4, 2);
    optim::SGD sgd(layer.parameters(), {.lr = 0.1, .momentum = 0.9});
    check_optimizer_agrees(default_group(), sgd);
    report("agreed");
  });
  expect_all_ok(outcomes);
}

TEST_CASE("setting_text is exact: values that differ in the last bit read differently") {
  CHECK(setting_text(0.05) == "0.05");
  CHECK(setting_text(0.1 + 0.2) == "0.30000000000000004");
  CHECK(setting_text(0.05) != setting_text(std::nextafter(0.05, 1.0)));
}

TEST_CASE("DistributedSampler: a different seed, dataset size or drop_last fails on every rank") {
  expect_desync_on_every_rank(
      [](int rank) { check_sampler_agrees(default_group(), data::DistributedSampler(1000, 2, rank, true, rank + 1)); },
      {"DistributedSampler: the ranks disagree: rank 1 has seed 2, rank 0 has 1",
       "every rank must build its sampler with the same seed"});
  expect_desync_on_every_rank(
      [](int rank) {
        check_sampler_agrees(default_group(), data::DistributedSampler(rank == 0 ? 1000 : 999, 2, rank));
      },
      {"rank 1 has dataset_size 999, rank 0 has 1000"});
  expect_desync_on_every_rank(
      [](int rank) {
        check_sampler_agrees(default_group(), data::DistributedSampler(1001, 2, rank, true, 0, rank == 1));
      },
      {"rank 1 has drop_last true, rank 0 has false"});
}

TEST_CASE("DistributedSampler: one built for another rank or replica count is refused") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(test::quick_init());
    try {
      check_sampler_agrees(default_group(), data::DistributedSampler(100, 3, rank));
    } catch (const ValueError& e) {
      report(e.what());
      return;
    }
    throw std::runtime_error("no ValueError");
  });
  expect_all_ok(outcomes);
  CHECK(outcomes[1].report.find("DistributedSampler: built for rank 1 of 3 replicas, but this process is rank 1 of "
                                "2 in the group") != std::string::npos);
}

TEST_CASE("optimizers: another kind or another option fails on every rank") {
  expect_desync_on_every_rank(
      [](int rank) {
        nn::Linear layer(4, 2);
        if (rank == 0) {
          check_optimizer_agrees(default_group(), optim::SGD(layer.parameters(), {.lr = 0.05}));
        } else {
          check_optimizer_agrees(default_group(), optim::Adam(layer.parameters(), {.lr = 0.05}));
        }
      },
      {"optimizer: the ranks disagree: rank 1 has optimizer Adam, rank 0 has SGD",
       "every rank must build the same optimizer"});
  expect_desync_on_every_rank(
      [](int rank) {
        nn::Linear layer(4, 2);
        check_optimizer_agrees(default_group(), optim::SGD(layer.parameters(), {.lr = rank == 0 ? 0.05 : 0.1}));
      },
      {"rank 1 has group 0 lr 0.1, rank 0 has 0.05"});
}
