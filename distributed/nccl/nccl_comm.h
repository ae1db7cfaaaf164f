// The NCCL communicator of one process group (private to distributed/nccl/nccl_*.cpp, the only files that include
// nccl.h): the ncclUniqueId exchange through the store, non-blocking initialisation bounded by the group's
// timeout, NCCL error texts that name the call and NCCL's own explanation, dtype and ReduceOp mapping, and
// abort. Compiled into libsyncgrad_cuda.so only when NCCL was found (distributed/nccl/meson.build).
#pragma once

#include <nccl.h>

#include <chrono>
#include <string>

#include "distributed/process_group.h"
#include "distributed/store.h"
#include "tensor/dtype.h"

namespace syncgrad::cuda {

// "<ncclGetErrorString> (<enum name>)" followed by ": <ncclGetLastError(comm)>" when NCCL has more to say.
std::string nccl_error_text(ncclResult_t result, ncclComm_t comm);

// The element type NCCL reduces `dtype` as. DTypeError (naming the collective) for bool, and for kAvg on an
// integer dtype (like the Gloo backend).
ncclDataType_t nccl_reduce_type(DType dtype, distributed::ReduceOp op, const std::string& collective);
ncclRedOp_t nccl_reduce_op(distributed::ReduceOp op);

using Clock = std::chrono::steady_clock;

// Sleeps a little longer on each call (10 us doubling up to 1 ms): the back-off of every polling loop here.
class Backoff {
 public:
  void pause();

 private:
  std::chrono::microseconds next_{10};
};

// A non-blocking NCCL communicator (config.blocking = 0): NCCL calls return ncclInProgress instead of
// blocking, so every wait on a peer is bounded by a deadline and can end in ncclCommAbort. Not thread-safe:
// the process group serialises every call on it.
class NcclComm {
 public:
  // Rank 0 creates the id with ncclGetUniqueId and sets it under `key`; the other ranks get it (waiting with
  // the store's timeout). Then ncclCommInitRankConfig on `device` (made current), polled until ready. Past
  // `timeout` the communicator is aborted and TimeoutError names the ranks' rendezvous; other failures are
  // DistributedErrors with NCCL's explanation and a hint.
  NcclComm(distributed::Store& store, const std::string& key, int rank, int size, int device,
           std::chrono::milliseconds timeout);
  // Finalizes and destroys the communicator (aborting it when that does not finish within the timeout);
  // after abort() there is nothing left to free. Never throws.
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  bool aborted() const { return comm_ == nullptr; }

  // The communicator's state: ncclSuccess, ncclInProgress (a non-blocking call is still being carried out)
  // or the asynchronous error that broke it (a peer died, a network failure).
  ncclResult_t state();
  // Polls state() while it is ncclInProgress, until `deadline`; returns the last state.
  ncclResult_t wait_ready(Clock::time_point deadline);
  // ncclCommAbort: stops every operation of the communicator still running on the device. Idempotent.
  void abort();

 private:
  ncclComm_t comm_ = nullptr;
  int device_;
  std::chrono::milliseconds timeout_;
};

}  // namespace syncgrad::cuda
