// ProcessGroup: the collectives of `size()` ranks over one backend (Gloo for CPU tensors, NCCL for CUDA
// tensors). Every rank must call the same collectives in the same order with matching tensors; each call
// returns at once with a Work and the collective runs in the background. Tensors must be contiguous and
// stay alive and unmodified until the Work completes. Dtypes: f32, f64, f16, bf16, i64, i32.
//
// Backends: Gloo implements every collective here; NCCL implements the ones NCCL has (allreduce, broadcast,
// allgather and reduce_scatter in both forms, barrier) and answers gather, scatter, all_to_all, send, recv and
// new_group with a DistributedError naming the operation and the backend (see unsupported()).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "distributed/comm_counters.h"
#include "distributed/store.h"
#include "distributed/work.h"
#include "tensor/tensor.h"

namespace syncgrad::distributed {

class FlightRecorder;

enum class ReduceOp { kSum, kAvg, kMax, kMin };
const char* reduce_op_name(ReduceOp op);

struct ProcessGroupOptions {
  // How long a collective may take before it fails (PyTorch's default is 30 min; ours is shorter so a
  // dead rank shows quickly).
  std::chrono::milliseconds timeout{600'000};
  // Gloo: the address this rank's sockets bind to (empty: the address that reaches the master).
  std::string bind_address;
  // NCCL: the CUDA device of this rank (LOCAL_RANK by default).
  int device_index = -1;
};

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size, ProcessGroupOptions options) : rank_(rank), size_(size), options_(options) {}
  // Tells syncgrad-launch's hang detection that the rank may now work without collectives (rank_heartbeat.h).
  virtual ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  const ProcessGroupOptions& options() const { return options_; }
  virtual std::string backend_name() const = 0;
  // Where this group's collectives take their tensors: the host for Gloo, this rank's CUDA device for NCCL.
  virtual Device tensor_device() const { return kCPU; }

  // In place: every rank's `tensor` becomes the reduction over ranks (kAvg divides by size()).
  virtual std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op = ReduceOp::kSum) = 0;
  // In place: every rank's `tensor` becomes root's.
  virtual std::shared_ptr<Work> broadcast(const Tensor& tensor, int root = 0) = 0;
  // outputs[r] receives rank r's `input` (size() tensors shaped like input).
  virtual std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input) = 0;
  // output = reduction over ranks of their inputs[rank()] (size() inputs, each shaped like output). A true
  // reduce-scatter: each rank sends (size()-1) blocks of output's size (NCCL: ncclReduceScatter; Gloo: a ring).
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                               ReduceOp op = ReduceOp::kSum) = 0;
  virtual std::shared_ptr<Work> barrier() = 0;

  // ---- One flat buffer instead of a list (torch.distributed's all_gather_into_tensor / reduce_scatter_tensor) ----
  // `output` holds size() * input.numel() elements of input's dtype (any shape, contiguous); rank r's input lands
  // in elements [r * n, (r + 1) * n), n = input.numel(). `input` may be that very block of `output` (in place).
  // Each rank sends (size()-1)/size() of output's bytes. ValueError when the element counts do not match.
  virtual std::shared_ptr<Work> allgather_into_tensor(const Tensor& output, const Tensor& input);
  // `input` holds size() * output.numel() elements; output = reduction over ranks of their input's block rank()
  // (elements [rank * n, (rank + 1) * n), n = output.numel()). `output` may be that very block of `input`.
  // Each rank sends (size()-1)/size() of input's bytes. Pad the input when its length is not a multiple of size().
  virtual std::shared_ptr<Work> reduce_scatter_tensor(const Tensor& output, const Tensor& input,
                                                      ReduceOp op = ReduceOp::kSum);

  // ---- Rooted and personalised collectives ----
  // On `root`: outputs[r] receives rank r's `input` (size() tensors shaped like input). Other ranks pass no
  // outputs (ValueError otherwise, as torch.distributed.gather).
  virtual std::shared_ptr<Work> gather(const std::vector<Tensor>& outputs, const Tensor& input, int root = 0);
  // Rank r's `output` receives root's inputs[r] (on root: size() tensors shaped like output; others pass none).
  virtual std::shared_ptr<Work> scatter(const Tensor& output, const std::vector<Tensor>& inputs, int root = 0);
  // Equal splits: input and output have the same dtype and size() * k elements; block r of this rank's input
  // goes to rank r, and block r of its output comes from rank r (torch.distributed.all_to_all_single).
  virtual std::shared_ptr<Work> all_to_all(const Tensor& output, const Tensor& input);

  // ---- Point to point ----
  // Sends `tensor` to rank `dst`, to be received by a recv(tensor, src = this rank, same tag) of the same byte
  // size. The Work completes when the message left (its buffer may then be reused). Sends and receives are
  // posted in call order with the collectives but complete independently, so both ranks may post a send
  // before their recv. ValueError for dst out of range or dst == rank().
  virtual std::shared_ptr<Work> send(const Tensor& tensor, int dst, uint32_t tag = 0);
  // Receives into `tensor` the message of rank `src` with `tag` (ValueError for src out of range or == rank()).
  virtual std::shared_ptr<Work> recv(const Tensor& tensor, int src, uint32_t tag = 0);

  // ---- Sub-groups ----
  // A process group over the ranks of this group listed in `ranks` (any order, no duplicates; the new group's
  // rank i is the i-th smallest of them), as torch.distributed.new_group. Every rank of this group must call
  // new_group with the same ranks in the same order (members rendezvous under a prefix of their own in the
  // store, "subgroup/<n>/"). A rank that is not listed gets a group whose is_member() is false, whose rank() is
  // -1, and whose collectives throw DistributedError (where PyTorch's NON_GROUP_MEMBER silently skips them).
  // The sub-group's collectives and errors speak of its own ranks (0..ranks.size()-1).
  virtual std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks);
  virtual bool is_member() const { return true; }

  // ---- Traffic ----
  // Payload bytes this rank sent on this group since it was created, and per collective ("allreduce",
  // "reduce_scatter", "allgather", "gather", "scatter", "all_to_all", "send", ...): counted where the bytes
  // are handed to the transport. Gloo counts every collective (its small-message allreduce ring from its
  // fixed schedule: size()-1 sends of the whole buffer); NCCL does not report its traffic, so its counts stay 0.
  uint64_t bytes_sent() const { return counters_->total_bytes_sent(); }
  CollectiveCount collective_count(const std::string& collective) const { return counters_->get(collective); }
  std::map<std::string, CollectiveCount> collective_counts() const { return counters_->all(); }

  // ---- Debugging ----
  // This group's flight recorder (flight_recorder.h): its recent collectives; null when SYNCGRAD_FLIGHT_RECORDER=0.
  const std::shared_ptr<FlightRecorder>& flight_recorder() const { return flight_; }
  // SYNCGRAD_DEBUG=detail: each collective's (op, dtype, shape) is checked across ranks before it runs (Gloo).
  bool checks_collectives() const { return check_collectives_; }

 protected:
  const std::shared_ptr<CommCounters>& counters() const { return counters_; }
  // Backends call this in their constructor: the flight recorder and the debug mode from the environment.
  void set_up_debugging(std::shared_ptr<Store> store);
  // Throws DistributedError("<op>: the <backend> process group does not implement it ...").
  [[noreturn]] void unsupported(const char* op) const;

 private:
  int rank_;
  int size_;
  ProcessGroupOptions options_;
  std::shared_ptr<CommCounters> counters_ = std::make_shared<CommCounters>();
  std::shared_ptr<FlightRecorder> flight_;
  bool check_collectives_ = false;
};

// The group a rank that is not in new_group's `ranks` gets: every collective throws DistributedError naming the
// group's ranks. `ranks` are the parent group's ranks of the members (sorted).
std::shared_ptr<ProcessGroup> make_non_member_group(const std::string& backend, int parent_rank,
                                                    std::vector<int> ranks, const ProcessGroupOptions& options);

// Checks new_group's `ranks` against a parent group of `parent_size` ranks (ValueError naming the bad rank:
// out of range, duplicate, or none at all) and returns them sorted.
std::vector<int> checked_group_ranks(std::vector<int> ranks, int parent_size);

// Backends register a factory under their name ("gloo" at library load, "nccl" when the CUDA module loads).
using ProcessGroupFactory = std::function<std::shared_ptr<ProcessGroup>(
    std::shared_ptr<Store> store, int rank, int size, const ProcessGroupOptions& options)>;
void register_process_group_backend(const std::string& name, ProcessGroupFactory factory);
// Throws DistributedError naming the backend and the available ones when it is not registered.
std::shared_ptr<ProcessGroup> make_process_group(const std::string& backend, std::shared_ptr<Store> store,
                                                 int rank, int size, const ProcessGroupOptions& options);

}  // namespace syncgrad::distributed
