// run_on_rank0 between 2 real processes with a short collective timeout (2 s): rank 0's work taking far longer
// than the timeout lets the other rank wait and the job go on (behind a barrier, as before, it fails the waiting
// rank at the timeout); work that fails on rank 0 fails the other rank with rank 0's error text; a rank 0 that
// never shows a sign of life fails the waiter with a TimeoutError once the silence limit is over; one that dies
// while serving the store fails the waiter at once; the keys of finished calls are removed.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "distributed/errors.h"
#include "distributed/hash_store.h"
#include "distributed/rank0_work.h"
#include "tests/distributed/multiprocess.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using namespace std::chrono_literals;
using syncgrad::test::expect;
using syncgrad::test::expect_all_ok;
using syncgrad::test::report;
using syncgrad::test::run_job;

TEST_CASE("rank 0's work may take far longer than the collective timeout: the others wait, then the job goes on") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(test::quick_init(2s));
    bool worked = false;
    for (int call = 0; call < 2; ++call) {
      run_on_rank0(default_group(), *default_store(), "saving the checkpoint", [&] {
        std::this_thread::sleep_for(5s);  // 2.5 x the timeout
        worked = true;
      });
    }
    expect(worked == (rank == 0), "only rank 0 does the work");
    default_group().barrier()->wait();  // the group is still usable
    expect(!default_store()->check({"rank0_work/1/outcome"}), "the first call's keys were removed");
    report("went on");
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
  for (const auto& outcome : outcomes) CHECK(outcome.report.find("went on") != std::string::npos);
}

TEST_CASE("the same work behind a barrier (what the trainer did before) fails the waiting rank at the timeout") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(test::quick_init(2s));
    if (rank == 0) std::this_thread::sleep_for(5s);
    try {
      default_group().barrier()->wait();
    } catch (const DistributedError& e) {
      report(std::string("failed: ") + e.what());
      return;
    }
    report("barrier passed");
  }, {.deadline_seconds = 120});
  INFO(outcomes[1].report);
  CHECK(outcomes[1].report.find("failed: ") != std::string::npos);
}

TEST_CASE("work that fails on rank 0 fails the waiting ranks with rank 0's error text") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(test::quick_init(20s));
    try {
      run_on_rank0(default_group(), *default_store(), "saving the checkpoint",
                   [] { throw IOError("model.safetensors: No space left on device"); });
    } catch (const IOError& e) {
      expect(rank == 0, "rank 0 gets its own exception back");
      report(std::string("IOError: ") + e.what());
      return;
    } catch (const PeerError& e) {
      expect(rank == 1, "the waiters get a PeerError");
      report(std::string("PeerError: ") + e.what());
      return;
    }
    throw std::runtime_error("no error");
  });
  expect_all_ok(outcomes);
  CHECK(outcomes[0].report.find("IOError: model.safetensors: No space left on device") != std::string::npos);
  CHECK(outcomes[1].report.find("PeerError: rank 1 waited while rank 0 was saving the checkpoint, which failed "
                                "there: model.safetensors: No space left on device") != std::string::npos);
}

TEST_CASE("a rank 0 that shows no sign of life fails the waiter once the silence limit is over") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(test::quick_init(2s));
    if (rank == 0) {
      std::this_thread::sleep_for(6s);  // stuck before the call: no heartbeat
      return;
    }
    try {
      run_on_rank0(default_group(), *default_store(), "saving the checkpoint", [] {});
    } catch (const TimeoutError& e) {
      report(std::string("TimeoutError: ") + e.what());
      return;
    }
    throw std::runtime_error("no TimeoutError");
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
  INFO(outcomes[1].report);
  CHECK(outcomes[1].report.find("TimeoutError: rank 1 waited while rank 0 was saving the checkpoint, but rank 0 has "
                                "shown no sign of life for ") != std::string::npos);
  CHECK(outcomes[1].report.find("or never started") != std::string::npos);
}

TEST_CASE("a rank 0 that dies during its work (serving the store itself) fails the waiter at once, not at the limit") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(test::quick_init(60s));
    try {
      run_on_rank0(default_group(), *default_store(), "saving the checkpoint", [] { _exit(3); });
    } catch (const PeerError& e) {
      report(std::string("PeerError: ") + e.what());
      return;
    }
    throw std::runtime_error("no PeerError on rank " + std::to_string(rank));
  }, {.deadline_seconds = 50, .parent_serves_store = false});
  CHECK(outcomes[0].exit_code == 3);
  INFO(outcomes[1].report);
  CHECK(outcomes[1].exit_code == 0);  // well before the 60 s silence limit (and the 50 s hang guard)
  CHECK(outcomes[1].report.find("PeerError: rank 1 waited while rank 0 was saving the checkpoint, but the store "
                                "stopped answering") != std::string::npos);
}

TEST_CASE("one process: the work just runs") {
  HashStore store;
  int runs = 0;
  run_on_rank0(0, 1, store, "saving", [&] { ++runs; }, {.silence_limit = 1s});
  CHECK(runs == 1);
}
