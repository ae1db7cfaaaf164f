// The launcher's typed exceptions. syncgrad-launch's main() turns a UsageError into exit status 2 and every
// other error into 1; the library code under tools/launch/ only throws.
#pragma once

#include "distributed/errors.h"

namespace syncgrad::launch {

// A bad command line: a flag value out of range, a missing flag or PROGRAM. Names the value and a fix.
class UsageError : public distributed::DistributedError {
 public:
  using distributed::DistributedError::DistributedError;
};

// Starting or supervising the ranks failed (PROGRAM cannot be executed, no pipe, no random source).
class LaunchError : public distributed::DistributedError {
 public:
  using distributed::DistributedError::DistributedError;
};

}  // namespace syncgrad::launch
