// PreemptionWatch: SIGTERM/SIGUSR1 become a flag (the process survives them), and the flag a stop that every
// rank of a Gloo job on 127.0.0.1 sees after the same step, whichever rank got the signal; rank 0's checkpoint
// interval likewise. Also measures what one poll costs between 2 processes (printed, not asserted).
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "distributed/init.h"
#include "distributed/preemption.h"
#include "tests/check_error.h"
#include "tests/distributed/multiprocess.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::test::expect;
using syncgrad::test::expect_all_ok;
using syncgrad::test::report;
using syncgrad::test::run_job;

TEST_CASE("preemption: one process stops on SIGTERM, and only one watch at a time") {
  auto outcomes = run_job(1, [](int) {
    PreemptionWatch watch({.check_every = 3});
    expect(!watch.should_stop(nullptr), "no signal yet");
    raise(SIGTERM);  // the default action would end the process here
    expect(PreemptionWatch::received_signal() == SIGTERM, "the signal is recorded");
    expect(!watch.should_stop(nullptr), "the second poll does not communicate (check_every 3)");
    expect(watch.should_stop(nullptr), "the third one stops");
    raise(SIGUSR1);  // a second signal changes nothing
    expect(PreemptionWatch::received_signal() == SIGTERM, "the first signal is the one reported");
    bool refused = false;
    try {
      PreemptionWatch second;
    } catch (const ValueError& e) {
      refused = std::string(e.what()).find("another one is already installed") != std::string::npos;
    }
    expect(refused, "a second watch is refused");
  });
  expect_all_ok(outcomes);
  syncgrad::testing::check_error([] { PreemptionWatch watch({.check_every = 0}); }, {"check_every 0", "at least 1"});
}

TEST_CASE("preemption: a signal to one rank stops all 3 after the same step") {
  auto outcomes = run_job(3, [](int rank) {
    auto group = init_process_group(syncgrad::test::quick_init());
    PreemptionWatch watch;
    int stopped_at = -1;
    for (int step = 1; step <= 50 && stopped_at < 0; ++step) {
      if (rank == 2 && step == 7) raise(SIGUSR1);
      if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the ranks are not in step
      if (watch.should_stop(group.get())) stopped_at = step;
    }
    report("stopped at " + std::to_string(stopped_at));
    expect(stopped_at == 7, "every rank stops after step 7, got " + std::to_string(stopped_at));
    expect((PreemptionWatch::received_signal() != 0) == (rank == 2), "only rank 2 got the signal");
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("preemption: rank 0's checkpoint interval is agreed, and one poll's cost between 2 processes") {
  auto outcomes = run_job(2, [](int rank) {
    auto group = init_process_group(syncgrad::test::quick_init());
    PreemptionWatch watch({.checkpoint_interval = std::chrono::milliseconds(200)});
    std::string saves;
    for (int step = 1; step <= 12; ++step) {
      if (rank == 0 && step % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
      const PreemptionDecision decision = watch.poll(group.get());
      expect(!decision.stop, "no stop without a signal");
      if (decision.save) saves += std::to_string(step) + " ";
    }
    expect(saves == "4 8 12 ", "rank " + std::to_string(rank) + " saved after steps " + saves);
    constexpr int kPolls = 2000;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPolls; ++i) watch.poll(group.get());
    const std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
    report("one PreemptionWatch::poll between 2 Gloo processes: " + std::to_string(spent.count() / kPolls) + " us");
    destroy_process_group();
  });
  expect_all_ok(outcomes);
  MESSAGE(outcomes[0].report);
}
