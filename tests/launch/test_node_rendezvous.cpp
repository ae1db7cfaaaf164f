// The launchers' per-attempt agreement (tools/launch/node_rendezvous.h) over an in-process store, each node a
// thread: node 0 closes an attempt once every node joined, numbers the nodes present, counts the failure
// restarts (not the admissions), aborts naming the missing nodes or a node with other settings; the first stop
// record wins; failures turn into restarts until they are exhausted, a preemption always ends the job.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "distributed/hash_store.h"
#include "tests/check_error.h"
#include "tools/launch/errors.h"
#include "tools/launch/node_rendezvous.h"

using namespace syncgrad::launch;
using syncgrad::testing::check_error;
using namespace std::chrono_literals;

namespace {

NodeInfo node(int rank, int min_nnodes = 2, int max_nnodes = 2, int max_restarts = 3) {
  NodeInfo n;
  n.node_rank = rank;
  n.host = "host" + std::to_string(rank);
  n.nproc = 2;
  n.max_restarts = max_restarts;
  n.min_nnodes = min_nnodes;
  n.max_nnodes = max_nnodes;
  return n;
}

uint16_t serve_port() { return 4242; }

}  // namespace

TEST_CASE("node 0 closes an attempt when every node joined; ranks follow the node order") {
  syncgrad::distributed::HashStore store(5s);
  NodeRendezvous zero(store, node(0), 5s, 5s);
  NodeRendezvous one(store, node(1), 5s, 5s);
  Membership seen_by_one;
  std::thread joiner([&] {
    one.join(0);
    seen_by_one = one.await_membership(0);
  });
  Membership m = zero.close(0, std::nullopt, std::nullopt, serve_port);
  joiner.join();
  CHECK(m.ranks_store_port == 4242);
  CHECK(m.restarts_used == 0);
  REQUIRE(m.nodes.size() == 2);
  CHECK(m.group_rank_of(1) == 1);
  CHECK(m.group_rank_of(5) == -1);
  CHECK(m.world_size() == 4);
  CHECK(m.describe() == "node 0 (host host0), node 1 (host host1)");
  CHECK(seen_by_one.describe() == m.describe());
  CHECK(seen_by_one.ranks_store_port == 4242);
  CHECK(zero.current_attempt() == 0);

  // The first stop record wins; the others get it back.
  StopRecord first = failure_record(1, "node 1 (host host1): rank 3 exited with status 1", m.restarts_used, 3);
  CHECK(first.kind == StopRecord::Kind::kRestart);
  CHECK(one.post_stop(0, first).reason == first.reason);
  StopRecord second{StopRecord::Kind::kEnd, 143, "node 0: told to stop"};
  StopRecord held = zero.post_stop(0, second);
  CHECK(held.kind == StopRecord::Kind::kRestart);
  CHECK(held.reason == first.reason);
  REQUIRE(zero.stop_record(0).has_value());
  CHECK(zero.stop_record(1) == std::nullopt);

  // Attempt 1 counts that failure restart.
  std::thread again([&] {
    one.join(1);
    one.await_membership(1);
  });
  Membership m1 = zero.close(1, m, held, serve_port);
  again.join();
  CHECK(m1.restarts_used == 1);
  CHECK(zero.current_attempt() == 1);
}

TEST_CASE("an elastic attempt closes with the nodes present after the last call; admissions are not counted") {
  syncgrad::distributed::HashStore store(5s);
  NodeRendezvous zero(store, node(0, 1, 3), 2s, 50ms);
  Membership previous;
  previous.restarts_used = 2;
  previous.nodes = {node(0, 1, 3), node(2, 1, 3)};
  NodeRendezvous two(store, node(2, 1, 3), 2s, 50ms);
  two.join(4);
  StopRecord admit{StopRecord::Kind::kAdmit, 0, "node 2 joins the job"};
  Membership m = zero.close(4, previous, admit, serve_port);  // node 2 back, node 1 absent: no wait for it
  CHECK(m.restarts_used == 2);
  CHECK(m.describe() == "node 0 (host host0), node 2 (host host2)");
  CHECK(m.group_rank_of(2) == 1);  // re-numbered contiguously
  Membership alone = zero.close(5, m, std::nullopt, serve_port);  // node 2 lost: node 0 goes on after the last call
  CHECK(alone.nodes.size() == 1);
  CHECK(alone.world_size() == 2);
}

TEST_CASE("node 0 aborts an attempt naming the missing node, and a node with other settings") {
  syncgrad::distributed::HashStore store(5s);
  NodeRendezvous zero(store, node(0), 200ms, 200ms);
  check_error<LaunchError>([&] { zero.close(0, std::nullopt, std::nullopt, serve_port); },
                           {"attempt 0: node 1 (never joined) did not join within --rendezvous-timeout 0.2 s",
                            "1 of 2 nodes joined and the job needs all 2 nodes (--nnodes 2)"});
  NodeRendezvous one(store, node(1), 200ms, 200ms);
  check_error<LaunchError>([&] { one.await_membership(0); }, {"node 1 (never joined) did not join"});

  NodeRendezvous other(store, node(1, 2, 2, 5), 5s, 5s);
  other.join(1);
  NodeRendezvous zero_again(store, node(0), 5s, 5s);
  check_error<LaunchError>([&] { zero_again.close(1, std::nullopt, std::nullopt, serve_port); },
                           {"node 1 (host host1) runs with --max-restarts 5 but node 0 with 3"});
  check_error<LaunchError>([&] { other.await_membership(1); }, {"runs with --max-restarts 5 but node 0 with 3"});
}

TEST_CASE("failure_record and describe_stop: restarts until exhausted, preemption always ends") {
  CHECK(failure_record(1, "x", 0, 2).kind == StopRecord::Kind::kRestart);
  CHECK(failure_record(1, "x", 2, 2).kind == StopRecord::Kind::kEnd);
  CHECK(failure_record(75, "x", 0, 2).kind == StopRecord::Kind::kEnd);
  CHECK(describe_stop(failure_record(1, "node 1 (host h): rank 3 exited with status 1", 0, 2), 0, 2) ==
        "node 1 (host h): rank 3 exited with status 1; restarting all nodes (restart 1 of 2)");
  CHECK(describe_stop(failure_record(137, "r", 2, 2), 2, 2) ==
        "r; restarts exhausted (2 of 2 used, --max-restarts 2); the job ends with status 137 on every node");
  CHECK(describe_stop(failure_record(75, "r", 0, 2), 0, 2) ==
        "r; preempted: the job ends with status 75 on every node (resumable)");
  CHECK(describe_stop({StopRecord::Kind::kAdmit, 0, "node 2 (host h) joins the job"}, 1, 2) ==
        "node 2 (host h) joins the job; restarting all nodes to take it in (not counted against --max-restarts)");
}
