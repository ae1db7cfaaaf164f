// A host-memory stand-in for NCCL, linked with the other stand-ins of this directory and the NCCL process group
// (distributed/nccl/) into libsyncgrad_cuda_nccl_emulated.so (a test fixture, never installed), so that
// tests/test_cuda_nccl.cpp runs the group's host side -- id exchange through the store, non-blocking setup,
// launch, completion polling, timeouts, abort, error reports -- on machines without a GPU.
//
// Ranks are threads of one process that meet through the unique id, each on its own fake device (two ranks on
// one device fail like NCCL's "Duplicate GPU"). A collective completes when every rank has called it; until
// then events recorded behind it are not ready. ncclCommAbort completes the communicator's own pending
// collectives (without running them) and makes its peers report ncclRemoteError; theirs never complete.
// Limits: the fake runtime runs copies at once, so a copy queued behind an unfinished collective does not wait
// for it (allgather's results are exact only at world size 1), and half types are reduced only at world size 1.
// $SYNCGRAD_FAKE_NCCL_REMOTE_ERROR_AT=k (read at setup): collective k (0-based) of each communicator never
// completes and the communicator reports ncclRemoteError instead.
//
// Also stands in for the stream and event calls of the CUDA runtime that only the NCCL group makes; they are
// weak, so a definition in fake_runtime.cpp takes precedence.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

enum class Kind { kAllReduce, kBroadcast, kAllGather, kReduceScatter };

struct Call {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclUint8;
  ncclRedOp_t op = ncclSum;
  int root = 0;
};

// One collective of one clique.
struct Op {
  Kind kind;
  std::vector<Call> calls;
  std::vector<bool> arrived;
  int count_arrived = 0;
  bool done = false;           // results written
  bool aborted = false;        // a member aborted before it completed: it never runs
  std::vector<bool> released;  // rank -> its communicator was aborted: its events complete
};

struct Clique {
  int size = 0;
  std::vector<int> devices;  // rank -> fake device, -1 until it joined
  int joined = 0;
  bool broken = false;  // a member aborted
  std::map<uint64_t, std::shared_ptr<Op>> ops;
};

// The last collective queued on a stream, and the rank that queued it.
struct Pending {
  std::shared_ptr<Op> op;
  int rank = 0;
  bool complete() const { return !op || op->done || op->released[rank]; }
};

struct FakeEvent {
  Pending pending;  // what it waits for
};

struct FakeStream {
  int device = 0;
};

std::mutex& state_mutex() {
  static auto* m = new std::mutex();
  return *m;
}

std::map<std::string, std::shared_ptr<Clique>>& cliques() {
  static auto* m = new std::map<std::string, std::shared_ptr<Clique>>();
  return *m;
}

// The last collective queued on each stream (any stream handle, including the fake runtime's compute streams).
std::map<cudaStream_t, Pending>& last_on_stream() {
  static auto* m = new std::map<cudaStream_t, Pending>();
  return *m;
}

thread_local std::string last_error;

ncclResult_t fail(ncclResult_t result, std::string text) {
  last_error = std::move(text);
  return result;
}

size_t type_size(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

template <class T>
T combine(T a, T b, ncclRedOp_t op) {
  if (op == ncclMax) return std::max(a, b);
  if (op == ncclMin) return std::min(a, b);
  return static_cast<T>(a + b);
}

// out[i] = reduction over k of srcs[k][i].
template <class T>
void reduce_typed(const std::vector<const void*>& srcs, void* out, size_t count, ncclRedOp_t op) {
  std::vector<T> acc(count);
  std::memcpy(acc.data(), srcs[0], count * sizeof(T));
  for (size_t k = 1; k < srcs.size(); ++k) {
    const T* src = static_cast<const T*>(srcs[k]);
    for (size_t i = 0; i < count; ++i) acc[i] = combine(acc[i], src[i], op);
  }
  if (op == ncclAvg) {
    for (T& v : acc) v = static_cast<T>(v / static_cast<T>(srcs.size()));
  }
  std::memcpy(out, acc.data(), count * sizeof(T));
}

void reduce(const std::vector<const void*>& srcs, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op) {
  if (srcs.size() == 1) {
    std::memmove(out, srcs[0], count * type_size(type));  // the identity, for every type and op
    return;
  }
  switch (type) {
    case ncclFloat32: return reduce_typed<float>(srcs, out, count, op);
    case ncclFloat64: return reduce_typed<double>(srcs, out, count, op);
    case ncclInt32: return reduce_typed<int32_t>(srcs, out, count, op);
    case ncclInt64: return reduce_typed<int64_t>(srcs, out, count, op);
    default: return reduce_typed<uint8_t>(srcs, out, count, op);
  }
}

// Runs a collective every rank has called; results are staged first, so buffers may alias.
void run(Op& op) {
  const int n = static_cast<int>(op.calls.size());
  const Call& first = op.calls[0];
  const size_t bytes = first.count * type_size(first.type);
  std::vector<const void*> sends;
  for (const Call& c : op.calls) sends.push_back(c.send);
  switch (op.kind) {
    case Kind::kAllReduce: {
      std::vector<unsigned char> result(bytes);
      reduce(sends, result.data(), first.count, first.type, first.op);
      for (const Call& c : op.calls) std::memcpy(c.recv, result.data(), bytes);
      break;
    }
    case Kind::kBroadcast: {
      std::vector<unsigned char> result(bytes);
      std::memcpy(result.data(), op.calls[first.root].send, bytes);
      for (const Call& c : op.calls) std::memcpy(c.recv, result.data(), bytes);
      break;
    }
    case Kind::kAllGather: {
      std::vector<unsigned char> result(bytes * n);
      for (int k = 0; k < n; ++k) std::memcpy(result.data() + k * bytes, sends[k], bytes);
      for (const Call& c : op.calls) std::memcpy(c.recv, result.data(), bytes * n);
      break;
    }
    case Kind::kReduceScatter: {
      std::vector<std::vector<unsigned char>> results(n, std::vector<unsigned char>(bytes));
      for (int r = 0; r < n; ++r) {
        std::vector<const void*> parts;
        for (int k = 0; k < n; ++k) parts.push_back(static_cast<const unsigned char*>(sends[k]) + r * bytes);
        reduce(parts, results[r].data(), first.count, first.type, first.op);
      }
      for (int r = 0; r < n; ++r) std::memcpy(op.calls[r].recv, results[r].data(), bytes);
      break;
    }
  }
  op.done = true;
}

}  // namespace

// The communicator handle NCCL declares opaque.
struct ncclComm {
  std::shared_ptr<Clique> clique;
  int rank = 0;
  uint64_t next_seq = 0;
  int64_t remote_error_at = -1;
  ncclResult_t async_error = ncclSuccess;
};

namespace {

ncclResult_t enqueue(Kind kind, const Call& call, ncclComm_t comm, cudaStream_t stream) {
  std::lock_guard lock(state_mutex());
  if (comm == nullptr) return fail(ncclInvalidArgument, "emulated NCCL: null communicator");
  Clique& clique = *comm->clique;
  if (clique.joined < clique.size) return fail(ncclInvalidUsage, "emulated NCCL: communicator not initialized");
  if (clique.size > 1 && (call.type == ncclFloat16 || call.type == ncclBfloat16) &&
      (kind == Kind::kAllReduce || kind == Kind::kReduceScatter)) {
    return fail(ncclInvalidArgument, "emulated NCCL reduces half types only at world size 1");
  }
  const uint64_t seq = comm->next_seq++;
  std::shared_ptr<Op>& op = clique.ops[seq];
  if (!op) {
    op = std::make_shared<Op>();
    op->kind = kind;
    op->calls.resize(clique.size);
    op->arrived.resize(clique.size, false);
    op->released.resize(clique.size, false);
    op->aborted = clique.broken;
  }
  if (op->kind != kind) return fail(ncclInvalidUsage, "emulated NCCL: ranks called different collectives");
  last_on_stream()[stream] = Pending{op, comm->rank};
  if (static_cast<int64_t>(seq) == comm->remote_error_at) {
    comm->async_error = ncclRemoteError;
    return ncclSuccess;  // queued, never completes
  }
  op->calls[comm->rank] = call;
  op->arrived[comm->rank] = true;
  if (++op->count_arrived == clique.size && !op->aborted) {
    run(*op);
    clique.ops.erase(seq);
  }
  return ncclSuccess;
}

}  // namespace

extern "C" {

// ---- CUDA runtime: streams and events (weak: fake_runtime.cpp's own definitions win) ----

__attribute__((weak)) cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  int device = 0;
  cudaGetDevice(&device);
  *stream = reinterpret_cast<cudaStream_t>(new FakeStream{device});
  return cudaSuccess;
}

__attribute__((weak)) cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::lock_guard lock(state_mutex());
  last_on_stream().erase(stream);
  delete reinterpret_cast<FakeStream*>(stream);
  return cudaSuccess;
}

__attribute__((weak)) cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  *event = reinterpret_cast<cudaEvent_t>(new FakeEvent());
  return cudaSuccess;
}

__attribute__((weak)) cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<FakeEvent*>(event);
  return cudaSuccess;
}

__attribute__((weak)) cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  std::lock_guard lock(state_mutex());
  auto it = last_on_stream().find(stream);
  reinterpret_cast<FakeEvent*>(event)->pending = it == last_on_stream().end() ? Pending{} : it->second;
  return cudaSuccess;
}

__attribute__((weak)) cudaError_t cudaEventQuery(cudaEvent_t event) {
  std::lock_guard lock(state_mutex());
  return reinterpret_cast<FakeEvent*>(event)->pending.complete() ? cudaSuccess : cudaErrorNotReady;
}

// The fake runtime runs everything at once: there is nothing to wait for.
__attribute__((weak)) cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }

// ---- NCCL ----

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) { return last_error.c_str(); }

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static std::atomic<int> next{0};
  std::memset(id->internal, 0, sizeof id->internal);
  const std::string text = "emulated-nccl-" + std::to_string(next++);
  std::memcpy(id->internal, text.data(), text.size());
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* out, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  *out = nullptr;
  if (config == nullptr || config->blocking != 0) {
    return fail(ncclInvalidUsage, "emulated NCCL supports non-blocking communicators only");
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "emulated NCCL: bad rank or nranks");
  int device = 0;
  cudaGetDevice(&device);
  std::lock_guard lock(state_mutex());
  std::shared_ptr<Clique>& clique = cliques()[std::string(id.internal, strnlen(id.internal, sizeof id.internal))];
  if (!clique) {
    clique = std::make_shared<Clique>();
    clique->size = nranks;
    clique->devices.assign(nranks, -1);
  }
  if (clique->size != nranks) return fail(ncclInvalidUsage, "emulated NCCL: ranks disagree on nranks");
  if (clique->devices[rank] != -1) return fail(ncclInvalidUsage, "emulated NCCL: rank joined twice");
  for (int r = 0; r < nranks; ++r) {
    if (clique->devices[r] == device) {
      return fail(ncclInvalidUsage, "Duplicate GPU detected : rank " + std::to_string(rank) + " and rank " +
                                        std::to_string(r) + " both on CUDA device " + std::to_string(device));
    }
  }
  clique->devices[rank] = device;
  ++clique->joined;
  auto* comm = new ncclComm();
  comm->clique = clique;
  comm->rank = rank;
  if (const char* at = std::getenv("SYNCGRAD_FAKE_NCCL_REMOTE_ERROR_AT")) comm->remote_error_at = std::atoll(at);
  *out = comm;
  return ncclInProgress;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  std::lock_guard lock(state_mutex());
  if (comm->async_error != ncclSuccess) {
    last_error = "emulated NCCL: injected remote error";
    *state = comm->async_error;
  } else if (comm->clique->broken) {
    last_error = "emulated NCCL: a peer aborted its communicator";
    *state = ncclRemoteError;
  } else {
    *state = comm->clique->joined < comm->clique->size ? ncclInProgress : ncclSuccess;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t) { return ncclSuccess; }

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  {
    std::lock_guard lock(state_mutex());
    comm->clique->broken = true;
    for (auto& [seq, op] : comm->clique->ops) {
      op->aborted = true;
      op->released[comm->rank] = true;
    }
  }
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return enqueue(Kind::kAllReduce, Call{send, recv, count, type, op, 0}, comm, stream);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return enqueue(Kind::kBroadcast, Call{send, recv, count, type, ncclSum, root}, comm, stream);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  return enqueue(Kind::kAllGather, Call{send, recv, count, type, ncclSum, 0}, comm, stream);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  return enqueue(Kind::kReduceScatter, Call{send, recv, count, type, op, 0}, comm, stream);
}

}  // extern "C"
