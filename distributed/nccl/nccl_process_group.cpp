// ProcessGroupNCCL: argument checks, the launch of each collective on the group's NCCL stream (ordered after
// the compute stream with an event, completion recorded in a second event), the Work that polls completion
// and aborts on timeout, and the "nccl" registration of the CUDA module.
#include "distributed/nccl/nccl_process_group.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "distributed/errors.h"
#include "distributed/flight_recorder.h"
#include "distributed/launch_env.h"
#include "distributed/nccl/nccl_comm.h"
#include "profiler/events.h"
#include "tensor/check.h"
#include "tensor/cuda/check.h"
#include "tensor/cuda/context.h"
#include "tensor/cuda/register.h"
#include "tensor/errors.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::cuda {

using distributed::DistributedError;
using distributed::ReduceOp;
using distributed::Work;

struct ProcessGroupNCCL::Shared {
  int rank = 0;
  int size = 1;
  int device = 0;
  std::chrono::milliseconds timeout{0};
  std::unique_ptr<NcclComm> comm;
  cudaStream_t stream = nullptr;  // the group's NCCL stream
  cudaEvent_t ready = nullptr;    // recorded on the compute stream before each collective
  std::shared_ptr<distributed::FlightRecorder> flight;  // null when turned off

  std::mutex mutex;  // guards everything below and every call on `comm`
  uint64_t next_seq = 0;
  std::string broken;  // why the group is unusable ("" while it works)

  ~Shared() {
    try {
      DeviceGuard guard(device);
      comm.reset();
      if (ready != nullptr) cudaEventDestroy(ready);
      if (stream != nullptr) cudaStreamDestroy(stream);
    } catch (const Error&) {
      // The CUDA runtime is already shut down (a group destroyed after main returned): nothing left to free.
    }
  }

  std::string head(const std::string& description) const {
    return "rank " + std::to_string(rank) + ": " + description;
  }

  // Marks the group broken (keeping the first reason) and aborts the communicator; caller holds `mutex`.
  void fail_locked(const std::string& reason) {
    if (broken.empty()) broken = reason;
    if (comm) comm->abort();
  }

  void fail(const std::string& reason) {
    std::lock_guard lock(mutex);
    fail_locked(reason);
  }

  // The result of an NCCL call made under `mutex`: ncclInProgress (the non-blocking communicator is still
  // enqueueing, e.g. connecting to peers) is waited out up to the timeout; anything else but success throws.
  void check_call(ncclResult_t r, const char* what, const std::string& description) {
    if (r == ncclInProgress) r = comm->wait_ready(Clock::now() + timeout);
    if (r == ncclSuccess) return;
    if (r == ncclInProgress) {
      throw distributed::TimeoutError(
          head(description) + ": " + what + " was still waiting for its peers after " +
          std::to_string(timeout.count()) + " ms: a peer rank is dead, stuck, or running a different collective "
          "(every rank must call the same collectives in the same order); the group is aborted");
    }
    const std::string text = nccl_error_text(r, comm->get());
    if (r == ncclRemoteError || r == ncclSystemError) {
      throw distributed::PeerError(head(description) + " failed: " + what + ": " + text +
                                   "; a peer rank exited or its connection broke (its own output says why)");
    }
    throw DistributedError(head(description) + " failed: " + what + ": " + text +
                           "; set NCCL_DEBUG=WARN for NCCL's own log");
  }

  // Null while the collective may still complete; otherwise the error it ends with. An asynchronous NCCL
  // error (a peer died, a network failure) aborts the communicator.
  std::exception_ptr async_failure(const std::string& description) {
    std::lock_guard lock(mutex);
    if (!broken.empty()) {
      return std::make_exception_ptr(DistributedError(
          head(description) + " did not complete: the process group was aborted (" + broken +
          "); create a new process group"));
    }
    const ncclResult_t state = comm->state();
    if (state == ncclSuccess || state == ncclInProgress) return nullptr;
    const std::string message = head(description) + " failed: NCCL reported " + nccl_error_text(state, comm->get()) +
                                "; a peer rank exited or its connection broke (its own output says why); the group "
                                "is aborted";
    fail_locked(message);
    return std::make_exception_ptr(distributed::PeerError(message));
  }
};

namespace {

using Shared = ProcessGroupNCCL::Shared;

// What a collective's body enqueues with: the communicator, the NCCL stream, and checked NCCL calls.
struct Enqueue {
  Shared& shared;
  const std::string& description;
  ncclComm_t comm() const { return shared.comm->get(); }
  cudaStream_t stream() const { return shared.stream; }
  void check(ncclResult_t r, const char* what) const { shared.check_call(r, what, description); }
};

// SG_NCCL_CALL(q, ncclAllReduce(...)): errors name the call as written.
#define SG_NCCL_CALL(q, expr) (q).check((expr), #expr)

// The handle of one collective: done when its completion event (recorded on the NCCL stream) has fired.
// Holds the tensors (the caller's and the staging buffers) until then.
class NcclWork final : public Work {
 public:
  NcclWork(std::string description, std::shared_ptr<Shared> shared, cudaEvent_t done, std::vector<Tensor> keep)
      : Work(std::move(description), shared->timeout),
        shared_(std::move(shared)),
        done_(done),
        keep_(std::move(keep)) {}

  ~NcclWork() override {
    const cudaError_t e = cudaEventQuery(done_);
    if (e != cudaSuccess) cudaGetLastError();  // not ready, or the runtime is gone: nothing to report here
    release(e == cudaSuccess);
    if (cudaEventDestroy(done_) != cudaSuccess) cudaGetLastError();
  }

  void wait(std::chrono::milliseconds timeout) override {
    if (timeout.count() <= 0) timeout = shared_->timeout;
    const auto deadline = Clock::now() + timeout;
    Backoff backoff;
    while (!poll()) {
      if (Clock::now() >= deadline) {
        const std::string message =
            shared_->head(description()) + " did not finish within " + std::to_string(timeout.count()) +
            " ms on cuda:" + std::to_string(shared_->device) +
            ": a peer rank is dead, stuck, or running a different collective (every rank must call the same "
            "collectives in the same order); the NCCL communicator is aborted, so this group cannot be used again";
        on_timeout();
        complete(explained(std::make_exception_ptr(distributed::TimeoutError(message))));
        break;
      }
      backoff.pause();
    }
    Work::wait(timeout);  // done by now: re-throws the error it finished with
  }

  bool is_completed() override {
    poll();
    return Work::is_completed();
  }

 protected:
  void on_timeout() override { shared_->fail(description() + " timed out"); }

 private:
  // Finishes the Work when the device is done with it or the group reports an error; true when finished.
  bool poll() {
    if (Work::is_completed()) return true;
    const cudaError_t e = cudaEventQuery(done_);
    if (e == cudaSuccess) {
      complete(nullptr, true);
      return true;
    }
    cudaGetLastError();  // the runtime records even cudaErrorNotReady; a later kernel-launch check must not see it
    if (e != cudaErrorNotReady) {
      const std::string message = shared_->head(description()) + " failed on cuda:" +
                                  std::to_string(shared_->device) + ": cudaEventQuery(done) reported " +
                                  cuda_error_text(e) + "; the group is aborted";
      shared_->fail(message);
      complete(std::make_exception_ptr(DeviceError(message)));
      return true;
    }
    if (std::exception_ptr error = shared_->async_failure(description())) {
      complete(error);
      return true;
    }
    return false;
  }

  void complete(std::exception_ptr error, bool device_done = false) {
    {
      std::lock_guard lock(mutex_);
      release(device_done);
    }
    finish(std::move(error));
  }

  // Drops the kept tensors. When the device may still use them (failure, abort), later work on the compute
  // stream (which reuses freed memory) is first made to wait for the completion event.
  void release(bool device_done) {
    if (keep_.empty()) return;
    if (!device_done) {
      try {
        DeviceGuard guard(shared_->device);
        SG_CUDA_CHECK(cudaStreamWaitEvent(compute_stream(shared_->device), done_, 0));
      } catch (const Error&) {
        // The device failed or the runtime is shutting down: the memory is not reused by anything that runs.
      }
    }
    keep_.clear();
  }

  std::shared_ptr<Shared> shared_;
  cudaEvent_t done_;
  std::mutex mutex_;
  std::vector<Tensor> keep_;
};

// Numbers the collective and launches it on the NCCL stream after the compute stream's queued work; `body`
// enqueues the copies and the NCCL call. A failure after numbering aborts the group: the other ranks have
// run (or will run) a collective this rank did not.
std::shared_ptr<Work> launch(const std::shared_ptr<Shared>& shared,
                             const std::function<distributed::DescribedCall(uint64_t seq)>& describe_seq,
                             std::vector<Tensor> keep, const std::function<void(const Enqueue&)>& body) {
  std::lock_guard lock(shared->mutex);
  const uint64_t seq = shared->next_seq;
  const distributed::DescribedCall described = describe_seq(seq);
  const std::string& description = described.text;
  // The caller's thread enqueues on the NCCL stream; the GPU's own time is for Nsight Systems to show.
  profiler::Scope span("nccl");
  if (span.active()) {
    span.set_name("nccl " + description.substr(0, description.find(' ')) + " (enqueue)");
    span.name_label();
  }
  SYNCGRAD_CHECK(shared->broken.empty(), DistributedError, shared->head(description),
                 " was not run: the process group failed earlier (", shared->broken, "); create a new process group");
  ++shared->next_seq;
  try {
    DeviceGuard guard(shared->device);
    cudaEvent_t done = nullptr;
    SG_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    auto work = std::make_shared<NcclWork>(description, shared, done, std::move(keep));
    if (shared->flight) {
      shared->flight->record(seq, described.call);
      work->set_flight(shared->flight, seq);
    }
    SG_CUDA_CHECK(cudaEventRecord(shared->ready, compute_stream(shared->device)));
    SG_CUDA_CHECK(cudaStreamWaitEvent(shared->stream, shared->ready, 0));
    try {
      body(Enqueue{*shared, description});
    } catch (const Error&) {
      // Whatever was enqueued before the failure still runs: the Work's release orders reuse after it.
      if (cudaEventRecord(done, shared->stream) != cudaSuccess) cudaGetLastError();
      throw;
    }
    SG_CUDA_CHECK(cudaEventRecord(done, shared->stream));
    return work;
  } catch (const DistributedError& e) {
    shared->fail_locked(e.what());
    throw;
  } catch (const DeviceError& e) {
    const std::string message = shared->head(description) + ": " + e.what() + "; the group is aborted";
    shared->fail_locked(message);
    throw DeviceError(message);
  }
}

distributed::DescribedCall describe(const char* collective, uint64_t seq, const Tensor& t,
                                    const std::string& extra = "") {
  return {std::string(collective) + " #" + std::to_string(seq) + " (" + (extra.empty() ? "" : extra + ", ") +
              dtype_name(t.dtype()) + ", " + std::to_string(t.numel()) + " elements)",
          distributed::FlightCall{collective, &t, extra}};
}

void check_tensor(const Shared& s, const Tensor& t, const char* collective, const std::string& what) {
  const std::string head = "rank " + std::to_string(s.rank) + ": " + collective + ": " + what;
  const std::string group_device = Device(DeviceType::kCUDA, s.device).str();
  SYNCGRAD_CHECK(t.defined(), ValueError, head, " is an undefined tensor");
  SYNCGRAD_CHECK(t.device().is_cuda(), DeviceError, head, " is on ", t.device().str(),
                 ", but the nccl backend handles CUDA tensors; move it with .to(", group_device,
                 ") or use backend \"gloo\" for CPU tensors");
  SYNCGRAD_CHECK(t.device().index == s.device, DeviceError, head, " is on ", t.device().str(),
                 ", but this rank's NCCL group uses ", group_device, " (one GPU per rank); move it with .to(",
                 group_device, ") or create the group with device_index ", t.device().index);
  SYNCGRAD_CHECK(t.is_contiguous(), ValueError, head,
                 " is not contiguous; pass tensor.contiguous() (collectives work in place on dense memory)");
}

void check_like(const Shared& s, const Tensor& t, const Tensor& like, const char* collective, const std::string& what) {
  check_tensor(s, t, collective, what);
  SYNCGRAD_CHECK(t.sizes() == like.sizes() && t.dtype() == like.dtype(), ShapeError, "rank ", s.rank, ": ", collective,
                 ": ", what, " is ", shape_str(t.sizes()), " ", dtype_name(t.dtype()), " but must match ",
                 shape_str(like.sizes()), " ", dtype_name(like.dtype()));
}

void check_count(const Shared& s, size_t count, const char* collective, const char* what) {
  SYNCGRAD_CHECK(static_cast<int>(count) == s.size, ValueError, "rank ", s.rank, ": ", collective, ": got ", count, " ",
                 what, " tensors for world size ", s.size, "; pass one per rank");
}

// options.device_index, or LOCAL_RANK when negative; DeviceError unless that device exists.
distributed::ProcessGroupOptions resolve_device(const distributed::ProcessGroupOptions& options, int rank) {
  distributed::ProcessGroupOptions resolved = options;
  std::string source = "ProcessGroupOptions::device_index";
  if (resolved.device_index < 0) {
    resolved.device_index = distributed::read_launch_env().local_rank;
    source = "LOCAL_RANK";
  }
  const std::string head = "rank " + std::to_string(rank) + ": the nccl process group";
  const int count = device_count();
  SYNCGRAD_CHECK(count != 0, DeviceError, head, " needs a CUDA device, but there is none (", device_count_problem(),
                 "); use backend \"gloo\" for CPU tensors");
  SYNCGRAD_CHECK(resolved.device_index < count, DeviceError, head, ": device cuda:", resolved.device_index, " (from ",
                 source, ") is out of range: ", count,
                 " CUDA device(s) visible. NCCL needs one GPU per rank: start at most ", count,
                 " rank(s) per node, or check CUDA_VISIBLE_DEVICES");
  return resolved;
}

// The store key of the NCCL id of the next group `rank` creates over `store`: ranks create their groups in the
// same order, so the n-th group of every rank meets under "nccl/unique_id/<n>". Counted per store object and
// rank, so ranks that are threads of one process sharing a store agree as well.
std::string next_id_key(const std::shared_ptr<distributed::Store>& store, int rank) {
  static std::mutex mutex;
  static auto* counts = new std::map<std::weak_ptr<distributed::Store>, std::map<int, uint64_t>, std::owner_less<>>();
  std::lock_guard lock(mutex);
  return "nccl/unique_id/" + std::to_string((*counts)[store][rank]++);
}

}  // namespace

ProcessGroupNCCL::ProcessGroupNCCL(std::shared_ptr<distributed::Store> store, int rank, int size,
                                   const distributed::ProcessGroupOptions& options)
    : ProcessGroup(rank, size, resolve_device(options, rank)), shared_(std::make_shared<Shared>()) {
  const std::string key = next_id_key(store, rank);
  shared_->rank = rank;
  shared_->size = size;
  shared_->device = this->options().device_index;
  shared_->timeout = options.timeout;
  try {
    DeviceGuard guard(shared_->device);
    SG_CUDA_CHECK(cudaStreamCreateWithFlags(&shared_->stream, cudaStreamNonBlocking));
    SG_CUDA_CHECK(cudaEventCreateWithFlags(&shared_->ready, cudaEventDisableTiming));
  } catch (const DeviceError& e) {
    throw DeviceError("rank " + std::to_string(rank) + ": the nccl process group on cuda:" +
                      std::to_string(shared_->device) + ": " + e.what());
  }
  shared_->comm = std::make_unique<NcclComm>(*store, key, rank, size, shared_->device, options.timeout);
  set_up_debugging(store);
  shared_->flight = flight_recorder();
}

ProcessGroupNCCL::~ProcessGroupNCCL() = default;

std::shared_ptr<Work> ProcessGroupNCCL::allreduce(const Tensor& tensor, ReduceOp op) {
  check_tensor(*shared_, tensor, "allreduce", "the tensor");
  const ncclDataType_t type = nccl_reduce_type(tensor.dtype(), op, "rank " + std::to_string(rank()) + ": allreduce");
  const ncclRedOp_t nccl_op = nccl_reduce_op(op);
  auto body = [&](const Enqueue& q) {
    if (tensor.numel() == 0) return;
    void* data = tensor.data_ptr();
    const size_t count = tensor.numel();
    SG_NCCL_CALL(q, ncclAllReduce(data, data, count, type, nccl_op, q.comm(), q.stream()));
  };
  auto name = [&](uint64_t seq) { return describe("allreduce", seq, tensor, reduce_op_name(op)); };
  return launch(shared_, name, {tensor}, body);
}

std::shared_ptr<Work> ProcessGroupNCCL::broadcast(const Tensor& tensor, int root) {
  check_tensor(*shared_, tensor, "broadcast", "the tensor");
  SYNCGRAD_CHECK(root >= 0 && root < size(), ValueError, "rank ", rank(), ": broadcast: root ", root, " is outside 0..",
                 size() - 1);
  // No arithmetic: any dtype travels as bytes.
  auto body = [&](const Enqueue& q) {
    if (tensor.numel() == 0) return;
    void* data = tensor.data_ptr();
    const size_t bytes = tensor.nbytes();
    SG_NCCL_CALL(q, ncclBroadcast(data, data, bytes, ncclUint8, root, q.comm(), q.stream()));
  };
  auto name = [&](uint64_t seq) { return describe("broadcast", seq, tensor, "root " + std::to_string(root)); };
  return launch(shared_, name, {tensor}, body);
}

std::shared_ptr<Work> ProcessGroupNCCL::allgather(const std::vector<Tensor>& outputs, const Tensor& input) {
  check_tensor(*shared_, input, "allgather", "the input");
  check_count(*shared_, outputs.size(), "allgather", "output");
  for (size_t r = 0; r < outputs.size(); ++r) {
    check_like(*shared_, outputs[r], input, "allgather", "output " + std::to_string(r));
  }
  const size_t bytes = input.nbytes();
  // NCCL gathers into one buffer and the outputs may be anywhere: gather (as bytes) into staging, copy out.
  Tensor staging = empty({static_cast<int64_t>(bytes) * size()}, {.dtype = DType::u8, .device = input.device()});
  auto body = [&](const Enqueue& q) {
    if (bytes == 0) return;
    auto* gathered = static_cast<char*>(staging.data_ptr());
    SG_NCCL_CALL(q, ncclAllGather(input.data_ptr(), gathered, bytes, ncclUint8, q.comm(), q.stream()));
    for (size_t r = 0; r < outputs.size(); ++r) {
      SG_CUDA_CHECK(cudaMemcpyAsync(outputs[r].data_ptr(), gathered + r * bytes, bytes, cudaMemcpyDeviceToDevice,
                                    q.stream()));
    }
  };
  std::vector<Tensor> keep = outputs;
  keep.push_back(input);
  keep.push_back(staging);
  auto name = [&](uint64_t seq) { return describe("allgather", seq, input); };
  return launch(shared_, name, std::move(keep), body);
}

std::shared_ptr<Work> ProcessGroupNCCL::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                       ReduceOp op) {
  check_tensor(*shared_, output, "reduce_scatter", "the output");
  check_count(*shared_, inputs.size(), "reduce_scatter", "input");
  for (size_t r = 0; r < inputs.size(); ++r) {
    check_like(*shared_, inputs[r], output, "reduce_scatter", "input " + std::to_string(r));
  }
  const std::string who = "rank " + std::to_string(rank()) + ": reduce_scatter";
  const ncclDataType_t type = nccl_reduce_type(output.dtype(), op, who);
  const ncclRedOp_t nccl_op = nccl_reduce_op(op);
  const size_t bytes = output.nbytes();
  // NCCL scatters from one buffer: copy the inputs into staging first.
  Tensor staging = empty({static_cast<int64_t>(bytes) * size()}, {.dtype = DType::u8, .device = output.device()});
  auto body = [&](const Enqueue& q) {
    if (bytes == 0) return;
    auto* all = static_cast<char*>(staging.data_ptr());
    for (size_t r = 0; r < inputs.size(); ++r) {
      SG_CUDA_CHECK(cudaMemcpyAsync(all + r * bytes, inputs[r].data_ptr(), bytes, cudaMemcpyDeviceToDevice,
                                    q.stream()));
    }
    void* out = output.data_ptr();
    const size_t count = output.numel();
    SG_NCCL_CALL(q, ncclReduceScatter(all, out, count, type, nccl_op, q.comm(), q.stream()));
  };
  std::vector<Tensor> keep = inputs;
  keep.push_back(output);
  keep.push_back(staging);
  auto name = [&](uint64_t seq) { return describe("reduce_scatter", seq, output, reduce_op_name(op)); };
  return launch(shared_, name, std::move(keep), body);
}

namespace {

// The flat collectives' pairing of a buffer of size() blocks with one block.
void check_flat(const Shared& s, const Tensor& flat, const Tensor& block, const char* collective, const char* flat_name,
                const char* block_name) {
  check_tensor(s, flat, collective, std::string("the ") + flat_name);
  check_tensor(s, block, collective, std::string("the ") + block_name);
  SYNCGRAD_CHECK(flat.dtype() == block.dtype(), DTypeError, "rank ", s.rank, ": ", collective, ": the ", flat_name,
                 " is ", dtype_name(flat.dtype()), " but the ", block_name, " is ", dtype_name(block.dtype()),
                 "; both must have the same dtype");
  SYNCGRAD_CHECK(flat.numel() == block.numel() * s.size, ValueError, "rank ", s.rank, ": ", collective, ": the ",
                 flat_name, " has ", flat.numel(), " elements but must have world size ", s.size, " x ",
                 block.numel(), " (the ", block_name, "'s) = ", block.numel() * s.size,
                 "; pad the flat buffer to a multiple of the world size");
}

}  // namespace

std::shared_ptr<Work> ProcessGroupNCCL::allgather_into_tensor(const Tensor& output, const Tensor& input) {
  check_flat(*shared_, output, input, "allgather_into_tensor", "output", "input");
  auto body = [&](const Enqueue& q) {
    if (input.numel() == 0) return;
    SG_NCCL_CALL(q, ncclAllGather(input.data_ptr(), output.data_ptr(), input.nbytes(), ncclUint8, q.comm(),
                                  q.stream()));
  };
  auto name = [&](uint64_t seq) { return describe("allgather_into_tensor", seq, input); };
  return launch(shared_, name, {output, input}, body);
}

std::shared_ptr<Work> ProcessGroupNCCL::reduce_scatter_tensor(const Tensor& output, const Tensor& input,
                                                              ReduceOp op) {
  check_flat(*shared_, input, output, "reduce_scatter_tensor", "input", "output");
  const std::string who = "rank " + std::to_string(rank()) + ": reduce_scatter_tensor";
  const ncclDataType_t type = nccl_reduce_type(output.dtype(), op, who);
  const ncclRedOp_t nccl_op = nccl_reduce_op(op);
  auto body = [&](const Enqueue& q) {
    if (output.numel() == 0) return;
    const size_t count = output.numel();
    SG_NCCL_CALL(q, ncclReduceScatter(input.data_ptr(), output.data_ptr(), count, type, nccl_op, q.comm(), q.stream()));
  };
  auto name = [&](uint64_t seq) { return describe("reduce_scatter_tensor", seq, input, reduce_op_name(op)); };
  return launch(shared_, name, {output, input}, body);
}

std::shared_ptr<Work> ProcessGroupNCCL::barrier() {
  // A one-element allreduce: it completes on a rank once every rank has joined it.
  Tensor token = empty({1}, {.dtype = DType::i32, .device = Device(DeviceType::kCUDA, shared_->device)});
  auto body = [&](const Enqueue& q) {
    void* data = token.data_ptr();
    SG_NCCL_CALL(q, ncclAllReduce(data, data, 1, ncclInt32, ncclSum, q.comm(), q.stream()));
  };
  auto name = [](uint64_t seq) {
    return distributed::DescribedCall{"barrier #" + std::to_string(seq),
                                      distributed::FlightCall{"barrier", nullptr, ""}};
  };
  return launch(shared_, name, {token}, body);
}

void register_nccl_process_group() {
  distributed::register_process_group_backend(
      "nccl", [](std::shared_ptr<distributed::Store> store, int rank, int size,
                 const distributed::ProcessGroupOptions& options) -> std::shared_ptr<distributed::ProcessGroup> {
        return std::make_shared<ProcessGroupNCCL>(std::move(store), rank, size, options);
      });
}

}  // namespace syncgrad::cuda
