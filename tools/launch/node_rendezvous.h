// The launchers' agreement on each attempt of a multi-node job, over the job's store that node 0's launcher
// serves (keys under "syncgrad-launch/", next to nothing of the ranks: they get a fresh store per attempt).
// Per attempt k: each launcher joins (its node record), node 0 closes the rendezvous (the membership: the
// nodes present, the ranks' store port, the restarts used so far) or aborts it naming the missing nodes; the
// first stop record (restart, admit a returning node, or end) ends attempt k everywhere; launchers beat a
// counter so node 0 notices a node that went silent, and count themselves done and gone at the end.
// The protocol is described in docs/DESIGN.md ("Multi-node restarts").
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distributed/store.h"

namespace syncgrad::launch {

// One node's launcher as it joins an attempt: identity (--node-rank, host name) and the settings every node
// must share.
struct NodeInfo {
  int node_rank = 0;
  std::string host;
  int nproc = 1;
  int max_restarts = 0;
  int min_nnodes = 1;
  int max_nnodes = 1;
  std::string describe() const;  // "node 1 (host h)"
};

// The nodes of one attempt, in --node-rank order: a node's GROUP_RANK is its index here (re-numbered
// contiguously, node 0 stays 0) and its ranks follow those of the nodes before it.
struct Membership {
  uint16_t ranks_store_port = 0;  // the attempt's store for the ranks, on node 0
  int restarts_used = 0;          // restarts after failures before this attempt (counted against --max-restarts)
  std::vector<NodeInfo> nodes;
  int group_rank_of(int node_rank) const;  // -1 when the node is not in this attempt
  int world_size() const;
  std::string describe() const;  // "node 0 (host a), node 1 (host b)"
};

// What ends an attempt before all its ranks succeeded. kRestart (a failure, counted against --max-restarts)
// and kAdmit (a node joins an elastic job; not counted) start attempt k+1 on every node; kEnd ends the job
// with `status` on every node.
struct StopRecord {
  enum class Kind { kRestart, kAdmit, kEnd };
  Kind kind = Kind::kEnd;
  int status = 1;
  std::string reason;  // "node 1 (host h): rank 3 exited with status 1"
};

// The record a failure (of exit code `status`) turns into: a restart while restarts remain, else the end; a
// preempted rank (status 75) always ends the job, to be resumed by a later one.
StopRecord failure_record(int status, std::string reason, int restarts_used, int max_restarts);
// The launcher's line for a stop record, e.g. "...; restarting all nodes (restart 2 of 3)".
std::string describe_stop(const StopRecord& record, int restarts_used, int max_restarts);

class NodeRendezvous {
 public:
  using Clock = std::chrono::steady_clock;

  // `store` is the job's store (on node 0); `self` this launcher; `rendezvous_timeout` how long node 0 waits
  // for the nodes of an attempt (--rendezvous-timeout); `last_call` how long it waits for more nodes once an
  // elastic job has MIN.
  NodeRendezvous(distributed::Store& store, NodeInfo self, std::chrono::milliseconds rendezvous_timeout,
                 std::chrono::milliseconds last_call);

  // Called about every 100 ms while waiting for the nodes (close, await_membership); may throw to give up,
  // e.g. on a stop signal to the launcher.
  void set_tick(std::function<void()> tick) { tick_ = std::move(tick); }

  // The attempt that node 0 last opened (0 before any).
  int current_attempt();
  // Joins attempt k (publishes this node's record).
  void join(int k);
  // The membership of attempt k if node 0 has closed it (a LaunchError with node 0's message when it aborted).
  std::optional<Membership> membership(int k);
  // Waits for node 0 to close attempt k: LaunchError when it aborted (naming the missing nodes) or did not
  // answer within the rendezvous timeout.
  Membership await_membership(int k);

  // Node 0: opens attempt k, waits for the nodes, calls serve() for the ranks' store port and publishes the
  // membership; `previous`/`previous_stop`: the last attempt and what ended it (none for the first). Aborts
  // (publishing why, then LaunchError) when not enough nodes joined in time or a node's settings differ.
  Membership close(int k, const std::optional<Membership>& previous, const std::optional<StopRecord>& previous_stop,
                   const std::function<uint16_t()>& serve);

  // Node 0: ends attempt k's rendezvous with `message` for every node waiting in it.
  void publish_abort(int k, const std::string& message);

  std::optional<StopRecord> stop_record(int k);
  // Posts `record` unless attempt k already has one; returns the record that holds (the first one posted).
  StopRecord post_stop(int k, const StopRecord& record);

  void beat(int k);
  int64_t beats(int k, int node_rank);
  void mark_done(int k);
  int64_t done_count(int k);
  void mark_left(int k);
  int64_t left_count(int k);
  // The nodes that have joined attempt k so far.
  int joined_count(int k);

 private:
  std::optional<NodeInfo> record_of(int k, int node_rank);
  std::string mismatch(const NodeInfo& other) const;
  [[noreturn]] void abort(int k, const std::string& message);
  std::string seen(int node_rank) const;

  distributed::Store& store_;
  NodeInfo self_;
  std::chrono::milliseconds rendezvous_timeout_;
  std::chrono::milliseconds last_call_;
  std::function<void()> tick_;
  std::map<int, std::string> hosts_seen_;  // node 0: the host of every node that ever joined
};

}  // namespace syncgrad::launch
