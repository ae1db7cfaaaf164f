// profiler::Trace and Scope in one process: nothing is recorded without a trace or while it is stopped; spans
// nest, carry their args and land on their own thread's track; a hand-off joins two threads by a flow naming
// the Label; the detail threshold drops short spans; only one Trace at a time; the JSON has pid, names, ts/dur;
// the clock offset and the job's file through a HashStore for two ranks that are threads.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "distributed/hash_store.h"
#include "distributed/trace_clock.h"
#include "distributed/trace_gather.h"
#include "profiler/trace.h"
#include "tensor/errors.h"

using namespace syncgrad;

namespace {

size_t count_named(const std::vector<profiler::ThreadTrace>& threads, const std::string& name) {
  size_t n = 0;
  for (const auto& t : threads) {
    for (const auto& e : t.events) n += e.name == name;
  }
  return n;
}

}  // namespace

TEST_CASE("spans are recorded only while a trace records") {
  { profiler::Scope before("test", "before any trace"); }
  profiler::Trace trace({}, false);
  { profiler::Scope stopped("test", "not started"); }
  trace.start();
  {
    profiler::Scope outer("test", "outer");
    outer.arg("step", 7);
    profiler::Scope inner("test", "inner");
  }
  trace.stop();
  { profiler::Scope after("test", "after stop"); }
  const auto threads = trace.threads();
  CHECK(count_named(threads, "outer") == 1);
  CHECK(count_named(threads, "inner") == 1);
  CHECK(count_named(threads, "not started") == 0);
  CHECK(count_named(threads, "after stop") == 0);
  CHECK(count_named(threads, "before any trace") == 0);
  for (const auto& t : threads) {
    for (const auto& e : t.events) {
      if (e.name == "outer") CHECK(e.numbers[0].value == 7);
    }
  }
  CHECK_THROWS_AS(profiler::Trace(), ValueError);  // one at a time
}

TEST_CASE("a hand-off joins the queueing thread to the worker by a flow naming the label") {
  profiler::Trace trace({.min_detail_us = 1'000'000});
  profiler::Handoff handoff;
  {
    const profiler::Label label("DDP bucket", 3, 12);
    handoff = profiler::hand_off();
  }
  std::thread worker([&] {
    profiler::set_thread_name("test worker");
    profiler::Scope span("gloo", "allreduce");
    span.receive(handoff);
    profiler::Scope too_short("autograd", "ShortBackward", profiler::Scope::Detail::kAboveThreshold);
  });
  worker.join();
  trace.stop();
  std::string list = "[";
  list += trace.event_list_json(4, "rank 4", 1000);
  list += ']';
  const nlohmann::json events = nlohmann::json::parse(list);
  bool start = false, finish = false, reduction = false, named = false, short_node = false;
  for (const auto& e : events) {
    CHECK(e["pid"] == 4);
    const uint64_t job_flow = (uint64_t{4} << 40) + handoff.flow_id;  // flow ids differ between ranks
    if (e["ph"] == "s") start = e["id"] == job_flow;
    if (e["ph"] == "f") finish = e["id"] == job_flow;
    if (e["ph"] == "X" && e["name"] == "allreduce") {
      reduction = e["args"]["caller"] == "DDP bucket" && e["args"]["index"] == 3 && e["args"]["step"] == 12 &&
                  e.contains("dur") && e.contains("ts");
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") named = named || e["args"]["name"] == "test worker";
    if (e["name"] == "ShortBackward") short_node = true;
  }
  CHECK(start);
  CHECK(finish);
  CHECK(reduction);
  CHECK(named);
  CHECK_FALSE(short_node);  // under the threshold
}

TEST_CASE("two ranks (threads over a HashStore): clock offsets and one merged file") {
  auto store = std::make_shared<distributed::HashStore>();
  profiler::Trace trace;
  { profiler::Scope span("test", "work"); }
  trace.stop();
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/sg_trace_test.json";
  distributed::ClockOffset clocks[2];
  std::thread other([&] {
    clocks[1] = distributed::measure_clock_offset(*store, 1, 2);
    distributed::write_job_trace(trace, *store, 1, 2, clocks[1], path, {.chunk_bytes = 100});
  });
  clocks[0] = distributed::measure_clock_offset(*store, 0, 2);
  const auto summary = distributed::write_job_trace(trace, *store, 0, 2, clocks[0], path, {.chunk_bytes = 100});
  other.join();
  CHECK(clocks[0].offset_ns == 0);
  CHECK(clocks[1].round_trip_ns > 0);
  // One process: the same clock, so the offset is within the round trip.
  CHECK(std::llabs(clocks[1].offset_ns) <= clocks[1].round_trip_ns);
  CHECK(summary.ranks == 2);
  std::ifstream in(path);
  const nlohmann::json document = nlohmann::json::parse(in);
  std::set<int> pids;
  for (const auto& e : document["traceEvents"]) {
    if (e["ph"] == "X") pids.insert(e["pid"].get<int>());
  }
  CHECK(pids == std::set<int>{0, 1});
  std::remove(path.c_str());
  CHECK_THROWS_AS(profiler::check_trace_path("/nonexistent-dir/x.json"), IOError);
}
