// Typed exceptions of the distributed runtime. Every message names the rank, key, address or collective
// involved and ends with a hint on the likely fix.
#pragma once

#include "tensor/errors.h"

namespace syncgrad::distributed {

// Base of every error raised by stores, process groups, DDP and the launcher.
class DistributedError : public Error {
 public:
  using Error::Error;
};

// A store operation or a collective did not finish within its timeout (names what was awaited).
class TimeoutError : public DistributedError {
 public:
  using DistributedError::DistributedError;
};

// A peer died, closed its connection, or sent a malformed or unauthenticated message.
class PeerError : public DistributedError {
 public:
  using DistributedError::DistributedError;
};

// Setting up the job failed: a missing or malformed environment variable, a port already in use, an
// unreachable master, a duplicate rank, ranks that never arrived.
class RendezvousError : public DistributedError {
 public:
  using DistributedError::DistributedError;
};

// Ranks disagree about what they are doing (different collectives, shapes, steps or parameter sets).
class DesyncError : public DistributedError {
 public:
  using DistributedError::DistributedError;
};

}  // namespace syncgrad::distributed
