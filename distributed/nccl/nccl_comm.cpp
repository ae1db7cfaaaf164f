// NcclComm: ncclUniqueId exchange through the store, non-blocking communicator setup with a deadline, abort and
// teardown; NCCL error texts, dtype and ReduceOp mapping for the NCCL process group.
#include "distributed/nccl/nccl_comm.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "distributed/errors.h"
#include "tensor/check.h"
#include "tensor/cuda/context.h"
#include "tensor/errors.h"

namespace syncgrad::cuda {

namespace {

const char* result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult";
  }
}

std::string rank_text(int rank) { return "rank " + std::to_string(rank); }

// The hint for a failed communicator setup, from NCCL's explanation.
std::string setup_hint(const std::string& text) {
  if (text.find("Duplicate GPU") != std::string::npos || text.find("duplicate GPU") != std::string::npos) {
    return "two ranks use the same GPU, which NCCL refuses: give each rank its own device (LOCAL_RANK or "
           "ProcessGroupOptions::device_index)";
  }
  return "check that every rank reached this point with the same world size and store, and set NCCL_DEBUG=WARN "
         "(or INFO) for NCCL's own log";
}

}  // namespace

std::string nccl_error_text(ncclResult_t result, ncclComm_t comm) {
  const char* text = ncclGetErrorString(result);
  std::string out = std::string(text != nullptr ? text : "unknown NCCL error") + " (" + result_name(result) + " " +
                    std::to_string(static_cast<int>(result)) + ")";
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') out += ": " + std::string(last);
  return out;
}

ncclDataType_t nccl_reduce_type(DType dtype, distributed::ReduceOp op, const std::string& collective) {
  SYNCGRAD_CHECK(op != distributed::ReduceOp::kAvg || is_floating(dtype), DTypeError, collective,
                 ": ReduceOp avg needs a floating dtype, got ", dtype_name(dtype),
                 "; reduce with sum and divide, or convert the tensor to f32 first");
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i64: return ncclInt64;
    case DType::i32: return ncclInt32;
    case DType::u8: return ncclUint8;
    case DType::boolean: break;
  }
  throw DTypeError(collective + ": cannot reduce a " + std::string(dtype_name(dtype)) +
                   " tensor with NCCL; convert it to u8 or i32 first (broadcast and allgather take any dtype)");
}

ncclRedOp_t nccl_reduce_op(distributed::ReduceOp op) {
  switch (op) {
    case distributed::ReduceOp::kSum: return ncclSum;
    case distributed::ReduceOp::kAvg: return ncclAvg;
    case distributed::ReduceOp::kMax: return ncclMax;
    case distributed::ReduceOp::kMin: return ncclMin;
  }
  throw ValueError("nccl: unknown ReduceOp " + std::to_string(static_cast<int>(op)));
}

void Backoff::pause() {
  std::this_thread::sleep_for(next_);
  next_ = std::min(next_ * 2, std::chrono::microseconds{1000});
}

NcclComm::NcclComm(distributed::Store& store, const std::string& key, int rank, int size, int device,
                   std::chrono::milliseconds timeout)
    : device_(device), timeout_(timeout) {
  using distributed::DistributedError;
  ncclUniqueId id{};
  if (rank == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    SYNCGRAD_CHECK(r == ncclSuccess, DistributedError, rank_text(rank),
                   ": ncclGetUniqueId(&id) failed: ", nccl_error_text(r, nullptr),
                   "; NCCL could not open its bootstrap socket (set NCCL_SOCKET_IFNAME to the network interface that "
                   "reaches the other ranks)");
    store.set(key, distributed::Bytes(id.internal, id.internal + NCCL_UNIQUE_ID_BYTES));
  } else {
    distributed::Bytes value;
    try {
      value = store.get(key);
    } catch (const distributed::TimeoutError& e) {
      throw distributed::RendezvousError(rank_text(rank) + ": rank 0 never published its NCCL id (store key \"" +
                                         key + "\"): " + e.what() +
                                         "; rank 0 failed or has not created its NCCL process group");
    }
    SYNCGRAD_CHECK(value.size() == NCCL_UNIQUE_ID_BYTES, distributed::RendezvousError, rank_text(rank),
                   ": the NCCL id under store key \"", key, "\" has ", value.size(), " bytes, not ",
                   NCCL_UNIQUE_ID_BYTES, "; another job or program uses the same store (use a fresh store or port)");
    std::memcpy(id.internal, value.data(), NCCL_UNIQUE_ID_BYTES);
  }

  DeviceGuard guard(device);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  comm_ = comm;
  if (r == ncclInProgress) r = wait_ready(Clock::now() + timeout);
  if (r == ncclSuccess) return;
  const std::string where = rank_text(rank) + ": NCCL communicator setup on cuda:" + std::to_string(device) + " (" +
                            std::to_string(size) + " ranks)";
  if (r == ncclInProgress) {
    abort();
    throw distributed::TimeoutError(where + " did not finish within " + std::to_string(timeout.count()) +
                                    " ms: not every rank joined (one is missing, dead, or was given a different "
                                    "store or world size); the communicator was aborted");
  }
  const std::string text = nccl_error_text(r, comm_);
  abort();
  throw DistributedError(where + ": ncclCommInitRankConfig(&comm, size, id, rank, &config) failed: " + text + "; " +
                         setup_hint(text));
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;
  try {
    DeviceGuard guard(device_);
    ncclResult_t r = ncclCommFinalize(comm_);
    if (r == ncclInProgress) r = wait_ready(Clock::now() + timeout_);
    if (r == ncclSuccess) {
      ncclCommDestroy(comm_);  // frees local resources only; a failure here leaves nothing to retry or report
      comm_ = nullptr;
      return;
    }
  } catch (const Error&) {
    // Finalization could not even start (the CUDA runtime is shutting down): abort below frees what it can.
  }
  abort();
}

ncclResult_t NcclComm::state() {
  if (comm_ == nullptr) return ncclInvalidUsage;
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  return r != ncclSuccess ? r : state;
}

ncclResult_t NcclComm::wait_ready(Clock::time_point deadline) {
  Backoff backoff;
  for (;;) {
    const ncclResult_t s = state();
    if (s != ncclInProgress || Clock::now() >= deadline) return s;
    backoff.pause();
  }
}

void NcclComm::abort() {
  if (comm_ == nullptr) return;
  ncclComm_t comm = comm_;
  comm_ = nullptr;
  ncclCommAbort(comm);  // frees the communicator whatever it returns; there is nothing left to retry
}

}  // namespace syncgrad::cuda
