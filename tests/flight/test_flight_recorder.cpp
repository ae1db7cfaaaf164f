// The flight recorder's pieces in one process: the ring (wrap-around, states, order), the caller scope, the
// settings from the environment, a dump read back by syncgrad-debug's reader and merged, and a failure explained
// without a store.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "distributed/collective_caller.h"
#include "distributed/collective_fingerprint.h"
#include "distributed/errors.h"
#include "distributed/flight_recorder.h"
#include "tensor/ops/factories.h"
#include "tools/debug/flight_merge.h"

using namespace syncgrad;
using namespace syncgrad::distributed;

namespace {

FlightSettings settings_of(size_t entries, const std::string& dir = "") {
  FlightSettings settings;
  settings.entries = entries;
  settings.dir = dir;
  return settings;
}

std::string temporary_dir() {
  char pattern[] = "/tmp/flight_test_XXXXXX";
  REQUIRE(mkdtemp(pattern) != nullptr);
  return pattern;
}

}  // namespace

TEST_CASE("the ring keeps the last N collectives, oldest first, with their states") {
  auto recorder = FlightRecorder::create(settings_of(4), nullptr, 0, 1, "gloo");
  REQUIRE(recorder);
  const Tensor t = zeros({8, 2});
  for (uint64_t seq = 0; seq < 6; ++seq) {
    const CollectiveCaller caller("step %d", static_cast<int>(seq));
    recorder->record(seq, FlightCall{"allreduce", &t, "sum"});
  }
  recorder->mark_started(4);
  recorder->mark_finished(4, false);
  recorder->mark_started(5);
  recorder->mark_finished(1, false);  // overwritten long ago: ignored
  const std::vector<FlightEntry> entries = recorder->entries();
  REQUIRE(entries.size() == 4);
  CHECK(entries.front().seq == 2);
  CHECK(entries.back().seq == 5);
  CHECK(entries[0].state == FlightState::kQueued);
  CHECK(entries[2].state == FlightState::kDone);
  CHECK(entries[3].state == FlightState::kStarted);
  CHECK(std::string(entries[3].caller) == "step 5");
  CHECK(entries[2].finished_us >= entries[2].started_us);
  CHECK(entries[2].started_us >= entries[2].queued_us);
  CHECK(flight_entry_summary(entries[3]) == "allreduce #5 (step 5, sum, float32 [8, 2], 64 B)");
  recorder->mark_finished(5, true);
  CHECK(recorder->entries().back().state == FlightState::kFailed);
}

TEST_CASE("a barrier has no tensor; caller scopes nest") {
  auto recorder = FlightRecorder::create(settings_of(8), nullptr, 0, 1, "gloo");
  CHECK(std::string(CollectiveCaller::current()).empty());
  {
    const CollectiveCaller outer("barrier at checkpoint");
    {
      const CollectiveCaller inner("DDP bucket %d", 3);
      CHECK(std::string(CollectiveCaller::current()) == "DDP bucket 3");
    }
    recorder->record(0, FlightCall{"barrier", nullptr, ""});
  }
  CHECK(std::string(CollectiveCaller::current()).empty());
  CHECK(flight_entry_summary(recorder->entries().at(0)) == "barrier #0 (barrier at checkpoint)");
}

TEST_CASE("SYNCGRAD_FLIGHT_RECORDER: 0 turns the recorder off, a bad value is named") {
  setenv("SYNCGRAD_FLIGHT_RECORDER", "0", 1);
  CHECK_FALSE(FlightRecorder::create(FlightSettings::from_env(), nullptr, 0, 1, "gloo"));
  setenv("SYNCGRAD_FLIGHT_RECORDER", "lots", 1);
  try {
    FlightSettings::from_env();
    FAIL("no error");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("SYNCGRAD_FLIGHT_RECORDER=\"lots\"") != std::string::npos);
  }
  unsetenv("SYNCGRAD_FLIGHT_RECORDER");
  CHECK(FlightSettings::from_env().entries == FlightSettings::kDefaultEntries);
}

TEST_CASE("a failure dumps the ring; syncgrad-debug's reader reads it back and finds the divergence") {
  const std::string dir = temporary_dir();
  auto recorder = FlightRecorder::create(settings_of(16, dir), nullptr, 0, 1, "gloo");
  const Tensor t = zeros({300000});
  for (uint64_t seq = 0; seq < 3; ++seq) {
    const CollectiveCaller caller("DDP bucket %d", static_cast<int>(seq));
    recorder->record(seq, FlightCall{"allreduce", &t, "sum"});
    recorder->mark_started(seq);
    if (seq < 2) recorder->mark_finished(seq, false);
  }
  const std::exception_ptr error =
      recorder->explained(std::make_exception_ptr(TimeoutError("allreduce #2 timed out")), 2);
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    CHECK(what.rfind("allreduce #2 timed out\nflight recorder: rank 0 waits in allreduce #2 (DDP bucket 2, sum, "
                     "float32 [300000], 1.2 MB), started ", 0) == 0);
    CHECK(what.find("syncgrad-debug flight " + dir) != std::string::npos);
  }
  const auto groups = debug::read_flight_dumps(dir);
  REQUIRE(groups.count("world") == 1);
  const std::vector<debug::FlightDump>& dumps = groups.at("world");
  REQUIRE(dumps.size() == 1);
  CHECK(dumps[0].records.size() == 3);
  CHECK(dumps[0].records[2].state == "failed");
  CHECK(dumps[0].reason == "allreduce #2 timed out");
  CHECK(debug::first_flight_divergence(dumps).rfind(
            "first divergence at #2: rank 0: allreduce #2 (DDP bucket 2, sum, float32 [300000], 1.2 MB), failed after ",
            0) == 0);
  const std::string view = debug::merged_flight_view(dumps, true);
  CHECK(view.find("DDP bucket 1") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an unwritable dump directory is said in the message, not thrown") {
  auto recorder = FlightRecorder::create(settings_of(4, "/nonexistent/flight"), nullptr, 0, 1, "gloo");
  const std::string text = recorder->explain_failure(-1, "desync");
  CHECK(text.find("could not write the flight recorder's dump /nonexistent/flight/") != std::string::npos);
  CHECK(text.find("set SYNCGRAD_FLIGHT_DIR to a writable directory") != std::string::npos);
}

TEST_CASE("fingerprints: equal calls pass, a different shape names both calls") {
  const Tensor a = zeros({1024}), b = zeros({512});
  CollectiveFingerprint mine, theirs;
  {
    const CollectiveCaller caller("DDP bucket 0");
    mine = fingerprint_of(FlightCall{"allreduce", &a, "sum"});
    theirs = fingerprint_of(FlightCall{"allreduce", &b, "sum"});
  }
  auto exchange_with = [](const CollectiveFingerprint& other) {
    return [other](uint8_t* data, size_t bytes) {
      CHECK(bytes == 2 * CollectiveFingerprint::kBytes);
      for (size_t i = 0; i < CollectiveFingerprint::kBytes; ++i) {
        data[CollectiveFingerprint::kBytes + i] += other.record[i];
      }
    };
  };
  CHECK_NOTHROW(check_fingerprints(mine, 0, 2, 7, exchange_with(mine)));
  try {
    check_fingerprints(mine, 0, 2, 7, exchange_with(theirs));
    FAIL("no error");
  } catch (const DesyncError& e) {
    CHECK(std::string(e.what()).rfind("SYNCGRAD_DEBUG=detail: collective #7 differs across ranks: rank 0 calls "
                                      "allreduce float32 [1024] sum (DDP bucket 0), rank 1 calls allreduce float32 "
                                      "[512] sum (DDP bucket 0)", 0) == 0);
  }
}
