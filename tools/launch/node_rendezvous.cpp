// The launchers' per-attempt agreement over the job's store: node records, node 0's membership or abort,
// stop records, heartbeats and the done/left counts. Values are short text lines, so a person can read them.
#include "tools/launch/node_rendezvous.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "distributed/errors.h"
#include "distributed/preemption.h"
#include "tensor/check.h"
#include "tools/launch/errors.h"

namespace syncgrad::launch {
namespace {

using distributed::to_bytes;
using distributed::to_string;

constexpr auto kCloseTick = std::chrono::milliseconds(100);
// Beyond the rendezvous timeout: how long the other nodes wait for node 0 to close or abort an attempt.
constexpr auto kCloseGrace = std::chrono::seconds(10);

std::string key(int k, const std::string& what) { return "syncgrad-launch/attempt/" + std::to_string(k) + "/" + what; }
std::string node_key(int k, int node_rank) { return key(k, "node/" + std::to_string(node_rank)); }
const std::string kCurrent = "syncgrad-launch/current";

std::string encode(const NodeInfo& n) {
  return std::to_string(n.node_rank) + " " + std::to_string(n.nproc) + " " + std::to_string(n.max_restarts) + " " +
         std::to_string(n.min_nnodes) + " " + std::to_string(n.max_nnodes) + " " + n.host;
}

NodeInfo decode_node(const std::string& text) {
  std::istringstream in(text);
  NodeInfo n;
  in >> n.node_rank >> n.nproc >> n.max_restarts >> n.min_nnodes >> n.max_nnodes;
  in.get();
  std::getline(in, n.host);
  SYNCGRAD_CHECK(!in.bad() && !n.host.empty(), distributed::PeerError,
                 "malformed node record in the job's store: \"", text, "\" (another program using this store?)");
  return n;
}

const char* kind_name(StopRecord::Kind kind) {
  switch (kind) {
    case StopRecord::Kind::kRestart: return "restart";
    case StopRecord::Kind::kAdmit: return "admit";
    case StopRecord::Kind::kEnd: return "end";
  }
  return "end";
}

std::string encode(const StopRecord& r) { return std::string(kind_name(r.kind)) + " " + std::to_string(r.status) + " " + r.reason; }

StopRecord decode_stop(const std::string& text) {
  std::istringstream in(text);
  std::string kind;
  StopRecord r;
  in >> kind >> r.status;
  in.get();
  std::getline(in, r.reason);
  SYNCGRAD_CHECK(!in.fail() && (kind == "restart" || kind == "admit" || kind == "end"), distributed::PeerError,
                 "malformed stop record in the job's store: \"", text, "\" (another program using this store?)");
  r.kind = kind == "restart" ? StopRecord::Kind::kRestart
           : kind == "admit" ? StopRecord::Kind::kAdmit
                             : StopRecord::Kind::kEnd;
  return r;
}

std::string encode(const Membership& m) {
  std::string text = "ok " + std::to_string(m.ranks_store_port) + " " + std::to_string(m.restarts_used);
  for (const NodeInfo& n : m.nodes) {
    text += '\n';
    text += encode(n);
  }
  return text;
}

Membership decode_membership(int k, const std::string& text) {
  if (text.rfind("abort ", 0) == 0) throw LaunchError(text.substr(6));
  std::istringstream in(text);
  std::string ok;
  Membership m;
  in >> ok >> m.ranks_store_port >> m.restarts_used;
  SYNCGRAD_CHECK(!in.fail() && ok == "ok", distributed::PeerError, "malformed membership of attempt ", k,
                 " in the job's store: \"", text, "\"");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) m.nodes.push_back(decode_node(line));
  return m;
}

std::string seconds_text(std::chrono::milliseconds ms) {
  std::ostringstream out;
  out << ms.count() / 1000.0 << " s";
  return out.str();
}

}  // namespace

std::string NodeInfo::describe() const { return "node " + std::to_string(node_rank) + " (host " + host + ")"; }

int Membership::group_rank_of(int node_rank) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].node_rank == node_rank) return static_cast<int>(i);
  }
  return -1;
}

int Membership::world_size() const {
  int total = 0;
  for (const NodeInfo& n : nodes) total += n.nproc;
  return total;
}

std::string Membership::describe() const {
  std::string text;
  for (const NodeInfo& n : nodes) text += (text.empty() ? "" : ", ") + n.describe();
  return text;
}

StopRecord failure_record(int status, std::string reason, int restarts_used, int max_restarts) {
  if (status == distributed::kPreemptedExitStatus || restarts_used >= max_restarts) {
    return {StopRecord::Kind::kEnd, status, std::move(reason)};
  }
  return {StopRecord::Kind::kRestart, status, std::move(reason)};
}

std::string describe_stop(const StopRecord& record, int restarts_used, int max_restarts) {
  const std::string max = std::to_string(max_restarts);
  switch (record.kind) {
    case StopRecord::Kind::kRestart:
      return record.reason + "; restarting all nodes (restart " + std::to_string(restarts_used + 1) + " of " + max + ")";
    case StopRecord::Kind::kAdmit:
      return record.reason + "; restarting all nodes to take it in (not counted against --max-restarts)";
    case StopRecord::Kind::kEnd:
      break;
  }
  if (record.status == distributed::kPreemptedExitStatus) {
    return record.reason + "; preempted: the job ends with status 75 on every node (resumable)";
  }
  if (max_restarts > 0 && restarts_used >= max_restarts && record.status != 0) {
    return record.reason + "; restarts exhausted (" + max + " of " + max + " used, --max-restarts " + max +
           "); the job ends with status " + std::to_string(record.status) + " on every node";
  }
  return record.reason + "; the job ends with status " + std::to_string(record.status) + " on every node";
}

NodeRendezvous::NodeRendezvous(distributed::Store& store, NodeInfo self, std::chrono::milliseconds rendezvous_timeout,
                               std::chrono::milliseconds last_call)
    : store_(store), self_(std::move(self)), rendezvous_timeout_(rendezvous_timeout), last_call_(last_call) {}

int NodeRendezvous::current_attempt() { return static_cast<int>(store_.add(kCurrent, 0)); }

void NodeRendezvous::join(int k) { store_.set(node_key(k, self_.node_rank), encode(self_)); }

std::optional<Membership> NodeRendezvous::membership(int k) {
  if (!store_.check({key(k, "members")})) return std::nullopt;
  return decode_membership(k, store_.get_string(key(k, "members")));
}

Membership NodeRendezvous::await_membership(int k) {
  const auto limit = rendezvous_timeout_ + kCloseGrace;
  const auto deadline = Clock::now() + limit;
  while (!store_.check({key(k, "members")})) {
    if (tick_) tick_();
    if (Clock::now() < deadline) {
      std::this_thread::sleep_for(kCloseTick);
      continue;
    }
    throw LaunchError(self_.describe() + ": node 0 did not close the rendezvous of attempt " + std::to_string(k) +
                      " within " + seconds_text(limit) +
                      " (--rendezvous-timeout and 10 s); is node 0's syncgrad-launch stopped or overloaded?");
  }
  return decode_membership(k, store_.get_string(key(k, "members")));
}

std::optional<NodeInfo> NodeRendezvous::record_of(int k, int node_rank) {
  if (!store_.check({node_key(k, node_rank)})) return std::nullopt;
  return decode_node(store_.get_string(node_key(k, node_rank)));
}

std::string NodeRendezvous::mismatch(const NodeInfo& other) const {
  auto differs = [&](const char* flag, const std::string& theirs, const std::string& ours) {
    return other.describe() + " runs with " + flag + " " + theirs + " but node 0 with " + ours +
           "; every node's syncgrad-launch needs the same " + flag;
  };
  if (other.nproc != self_.nproc) {
    return differs("--nproc-per-node", std::to_string(other.nproc), std::to_string(self_.nproc));
  }
  if (other.max_restarts != self_.max_restarts) {
    return differs("--max-restarts", std::to_string(other.max_restarts), std::to_string(self_.max_restarts));
  }
  if (other.min_nnodes != self_.min_nnodes || other.max_nnodes != self_.max_nnodes) {
    auto range = [](const NodeInfo& n) {
      return n.min_nnodes == n.max_nnodes ? std::to_string(n.max_nnodes)
                                          : std::to_string(n.min_nnodes) + ":" + std::to_string(n.max_nnodes);
    };
    return differs("--nnodes", range(other), range(self_));
  }
  if (other.node_rank >= self_.max_nnodes) {
    return other.describe() + " has --node-rank " + std::to_string(other.node_rank) + ", not below --nnodes " +
           std::to_string(self_.max_nnodes);
  }
  return {};
}

void NodeRendezvous::publish_abort(int k, const std::string& message) {
  store_.set(key(k, "members"), "abort " + message);
}

void NodeRendezvous::abort(int k, const std::string& message) {
  publish_abort(k, message);
  throw LaunchError(message);
}

std::string NodeRendezvous::seen(int node_rank) const {
  auto it = hosts_seen_.find(node_rank);
  return "node " + std::to_string(node_rank) +
         (it == hosts_seen_.end() ? " (never joined)" : " (host " + it->second + ")");
}

Membership NodeRendezvous::close(int k, const std::optional<Membership>& previous,
                                 const std::optional<StopRecord>& previous_stop,
                                 const std::function<uint16_t()>& serve) {
  store_.set(kCurrent, std::to_string(k));
  join(k);
  const auto start = Clock::now();
  const auto deadline = start + rendezvous_timeout_;
  std::optional<Clock::time_point> enough_since;  // when MIN nodes had joined
  std::map<int, NodeInfo> present;
  for (;;) {
    for (int n = 0; n < self_.max_nnodes; ++n) {
      if (present.count(n) != 0) continue;
      if (std::optional<NodeInfo> info = record_of(k, n)) {
        if (std::string why = mismatch(*info); !why.empty()) abort(k, "attempt " + std::to_string(k) + ": " + why);
        hosts_seen_[n] = info->host;
        present.emplace(n, *info);
      }
    }
    const int count = static_cast<int>(present.size());
    bool everyone_back = count == self_.max_nnodes;
    if (previous && count >= self_.min_nnodes) {
      everyone_back = std::all_of(previous->nodes.begin(), previous->nodes.end(),
                                  [&](const NodeInfo& n) { return present.count(n.node_rank) != 0; });
    }
    if (count >= self_.min_nnodes && !enough_since) enough_since = Clock::now();
    const auto now = Clock::now();
    if (everyone_back || (enough_since && now - *enough_since >= last_call_)) break;
    if (now >= deadline) {
      std::string missing;
      for (int n = 0; n < self_.max_nnodes; ++n) {
        const bool expected = previous ? previous->group_rank_of(n) >= 0 || hosts_seen_.count(n) != 0 : true;
        if (present.count(n) == 0 && expected) missing += (missing.empty() ? "" : ", ") + seen(n);
      }
      const std::string need = self_.min_nnodes == self_.max_nnodes
                                   ? "the job needs all " + std::to_string(self_.max_nnodes) + " nodes (--nnodes " +
                                         std::to_string(self_.max_nnodes) + ")"
                                   : "the job needs at least " + std::to_string(self_.min_nnodes) + " (--nnodes " +
                                         std::to_string(self_.min_nnodes) + ":" + std::to_string(self_.max_nnodes) +
                                         ")";
      if (missing.empty()) missing = "the nodes still missing";
      abort(k, "attempt " + std::to_string(k) + ": " + missing + " did not join within --rendezvous-timeout " + seconds_text(rendezvous_timeout_) + "; " +
                   std::to_string(count) + " of " + std::to_string(self_.max_nnodes) + " nodes joined and " + need +
                   ": is that node's syncgrad-launch running, with the same --master-addr, --master-port and token?");
    }
    if (tick_) tick_();
    std::this_thread::sleep_for(kCloseTick);
  }
  Membership m;
  for (auto& [n, info] : present) m.nodes.push_back(info);
  m.restarts_used = previous ? previous->restarts_used : 0;
  if (previous_stop && previous_stop->kind == StopRecord::Kind::kRestart) ++m.restarts_used;
  m.ranks_store_port = serve();
  store_.set(key(k, "members"), encode(m));
  return m;
}

std::optional<StopRecord> NodeRendezvous::stop_record(int k) {
  if (!store_.check({key(k, "stop")})) return std::nullopt;
  return decode_stop(store_.get_string(key(k, "stop")));
}

StopRecord NodeRendezvous::post_stop(int k, const StopRecord& record) {
  return decode_stop(to_string(store_.compare_set(key(k, "stop"), {}, to_bytes(encode(record)))));
}

void NodeRendezvous::beat(int k) { store_.add(key(k, "beat/" + std::to_string(self_.node_rank)), 1); }

int64_t NodeRendezvous::beats(int k, int node_rank) { return store_.add(key(k, "beat/" + std::to_string(node_rank)), 0); }

void NodeRendezvous::mark_done(int k) { store_.add(key(k, "done"), 1); }

int64_t NodeRendezvous::done_count(int k) { return store_.add(key(k, "done"), 0); }

void NodeRendezvous::mark_left(int k) { store_.add(key(k, "left"), 1); }

int64_t NodeRendezvous::left_count(int k) { return store_.add(key(k, "left"), 0); }

int NodeRendezvous::joined_count(int k) {
  int count = 0;
  for (int n = 0; n < self_.max_nnodes; ++n) count += store_.check({node_key(k, n)}) ? 1 : 0;
  return count;
}

}  // namespace syncgrad::launch
