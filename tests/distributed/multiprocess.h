// Test helper: runs a function in N forked processes that form one job on 127.0.0.1 (the parent serves the
// job's TCPStore, as syncgrad-launch does), collects each rank's exit status and report, and kills ranks
// that outlive the deadline so a broken test fails instead of hanging.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "distributed/init.h"

namespace syncgrad::test {

struct RankOutcome {
  int exit_code = -1;   // -1: killed at the deadline
  std::string report;   // what the rank passed to report(), then "ERROR <what>" when it threw
  double seconds = 0;   // from the start of the job until this rank exited
};

struct JobOptions {
  double deadline_seconds = 60;
  // Extra environment per rank (applied after RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...).
  std::function<std::map<std::string, std::string>(int rank)> extra_env = nullptr;
  // When false, no store is served by the parent: rank 0 serves it itself on a port chosen by the parent.
  bool parent_serves_store = true;
};

// Runs body(rank) in world_size forked children. Exceptions in body become exit code 1 and an "ERROR ..."
// report line. Returns one outcome per rank. Forks only once the test process is down to its main thread (threads
// of earlier test cases may hold a lock the children would need), and throws when other threads outlive 10 s.
std::vector<RankOutcome> run_job(int world_size, const std::function<void(int rank)>& body,
                                 const JobOptions& options = {});

// Appends a line to this rank's report (call it in body).
void report(const std::string& line);

// Throws std::runtime_error(message) when !condition (doctest's CHECK does not work inside a child).
void expect(bool condition, const std::string& message);

// A port that was free a moment ago (for tests of rank 0 serving the store itself).
int free_port();

// init_process_group options for tests: collectives time out after `timeout`, rendezvous after 20 s.
distributed::InitOptions quick_init(std::chrono::milliseconds timeout = std::chrono::milliseconds{20'000});

// doctest CHECKs that every rank exited with 0 (showing a failing rank's report).
void expect_all_ok(const std::vector<RankOutcome>& outcomes);

}  // namespace syncgrad::test
