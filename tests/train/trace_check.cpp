// Checks a syncgrad-train --trace file of a DDP run (tests/train/test_trace.sh): the trace-event format
// (tools/plot/trace_file.h), pid = rank with "rank N" process names, named threads, spans nesting per thread,
// the trainer's and the library's spans present (a checkpoint inside the window), every DDP bucket launch of rank 0
// joined by a flow to the Gloo worker's reduction of that bucket and step, clocks aligned (each rank's "step N"
// overlaps rank 0's) and exactly the steps of the window. Prints ok/FAILED lines; exit status 1 when one failed. Usage:
// trace_check TRACE.json RANKS FIRST_STEP LAST_STEP
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "tensor/errors.h"
#include "tools/plot/trace_file.h"

namespace {

int failures = 0;
void check(const std::string& what, bool ok, const std::string& detail = "") {
  std::printf("%s: %s%s\n", ok ? "ok" : "FAILED", what.c_str(), ok || detail.empty() ? "" : (" -- " + detail).c_str());
  if (!ok) ++failures;
}

bool has_span(const syncgrad::plot::TraceFile& t, int pid, const std::string& name) {
  for (const auto& s : t.spans) {
    if (s.pid == pid && s.name == name) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: trace_check TRACE.json RANKS FIRST_STEP LAST_STEP\n");
    return 2;
  }
  const int ranks = std::atoi(argv[2]);
  const int first = std::atoi(argv[3]), last = std::atoi(argv[4]);
  syncgrad::plot::TraceFile t;
  try {
    t = syncgrad::plot::read_trace_file(argv[1]);
    check("the file follows the trace-event format", true);
  } catch (const syncgrad::Error& e) {
    check("the file follows the trace-event format", false, e.what());
    return 1;
  }
  std::set<int> pids;
  for (const auto& s : t.spans) pids.insert(s.pid);
  check("pid = rank: spans of exactly ranks 0.." + std::to_string(ranks - 1),
        pids.size() == static_cast<size_t>(ranks) && *pids.begin() == 0 && *pids.rbegin() == ranks - 1);
  bool named = true;
  for (int r = 0; r < ranks; ++r) named = named && t.process_names[r] == "rank " + std::to_string(r);
  check("each process is named \"rank N\"", named);
  std::string unnamed;
  for (const auto& s : t.spans) {
    if (!t.thread_names.count({s.pid, s.tid}))
      unnamed = "pid " + std::to_string(s.pid) + " tid " + std::to_string(s.tid);
  }
  check("every thread with spans has a thread_name", unnamed.empty(), unnamed);
  std::set<std::string> thread_names;
  for (const auto& [key, name] : t.thread_names) thread_names.insert(name);
  check("tracks of the training loop, the Gloo worker and a data worker", thread_names.count("main (training loop)") &&
                                                                              thread_names.count("gloo worker") &&
                                                                              thread_names.count("data worker 0"));
  const auto problems = syncgrad::plot::nesting_problems(t);
  check("spans nest properly on every thread", problems.empty(), problems.empty() ? "" : problems.front());
  for (const char* name : {"data wait", "forward", "backward", "optimizer step", "DDP copy into bucket", "DDP launch",
                           "DDP wait for reductions", "DDP write-back", "load batch", "allreduce", "checkpoint"}) {
    bool everywhere = true;
    for (int r = 0; r < ranks; ++r) everywhere = everywhere && has_span(t, r, name);
    check(std::string("every rank has \"") + name + "\" spans", everywhere);
  }
  bool autograd = false;
  for (const auto& s : t.spans)
    autograd = autograd || (s.category == "autograd" && s.name.find("Backward") != std::string::npos);
  check("autograd nodes appear under their op names", autograd);

  // Every bucket launch of rank 0: a flow starts inside it, ends at a Gloo reduction naming the bucket and step.
  std::map<uint64_t, const syncgrad::plot::TraceSpan*> reduction_of_flow;
  for (const auto& s : t.spans) {
    if (s.pid == 0 && s.category == "gloo" && s.number("flow") > 0)
      reduction_of_flow[static_cast<uint64_t>(s.number("flow"))] = &s;
  }
  int launches = 0, matched = 0;
  std::string unmatched;
  for (const auto& launch : t.spans) {
    if (launch.pid != 0 || launch.name != "DDP launch") continue;
    ++launches;
    bool found = false;
    for (const auto& flow : t.flows) {
      if (flow.phase != 's' || flow.pid != 0 || flow.tid != launch.tid || flow.ts_us < launch.ts_us - 0.002 ||
          flow.ts_us > launch.end_us() + 0.002 || !reduction_of_flow.count(flow.id)) {
        continue;
      }
      const auto* r = reduction_of_flow[flow.id];
      found = found || (r->texts.count("caller") && r->texts.at("caller") == "DDP bucket" &&
                        r->number("index") == launch.number("bucket") && r->number("step") == launch.number("step") &&
                        r->ts_us >= flow.ts_us - 0.002);
    }
    if (found) {
      ++matched;
    } else if (unmatched.empty()) {
      unmatched =
          "bucket " + std::to_string(launch.number("bucket")) + " step " + std::to_string(launch.number("step"));
    }
  }
  check("rank 0 launched buckets (" + std::to_string(launches) + ")", launches > 0);
  check("every bucket launch of rank 0 has its reduction on the Gloo worker, joined by a flow", matched == launches,
        "no reduction for " + unmatched);

  // The window, and the clocks: each rank's "step N" overlaps rank 0's.
  std::map<int, std::map<int, const syncgrad::plot::TraceSpan*>> steps;  // rank -> step -> span
  for (const auto& s : t.spans) {
    if (s.category == "train" && s.name.rfind("step ", 0) == 0) steps[s.pid][static_cast<int>(s.number("step"))] = &s;
  }
  std::set<int> expected;
  for (int s = first; s <= last; ++s) expected.insert(s);
  bool window = true;
  for (int r = 0; r < ranks; ++r) {
    std::set<int> seen;
    for (const auto& [n, span] : steps[r]) seen.insert(n);
    window = window && seen == expected;
  }
  check("exactly steps " + std::to_string(first) + ".." + std::to_string(last) + " are recorded on every rank", window);
  bool forward_in_window = true;
  for (const auto& s : t.spans) {
    if (s.name == "forward")
      forward_in_window = forward_in_window && expected.count(static_cast<int>(s.number("step")));
  }
  check("forward spans only of steps in the window", forward_in_window);
  bool aligned = true;
  std::string misaligned;
  for (int r = 1; r < ranks; ++r) {
    for (const auto& [n, span] : steps[r]) {
      const auto* zero = steps[0].count(n) ? steps[0][n] : nullptr;
      if (zero == nullptr || span->ts_us >= zero->end_us() || zero->ts_us >= span->end_us()) {
        aligned = false;
        misaligned = "rank " + std::to_string(r) + " step " + std::to_string(n);
      }
    }
  }
  check("clocks aligned: each rank's step spans overlap rank 0's of the same step", aligned, misaligned);
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
