// Errors of the DataLoader: WorkerError for a failure that is not a syncgrad error, TimeoutError when no batch
// arrives in time, and rethrow_with_context, which re-raises the exception being handled with the same
// syncgrad type and a prefix saying where it happened ("DataLoader worker 1, sample 37 (batch 4): ...").
#pragma once

#include <string>

#include "tensor/errors.h"

namespace syncgrad::data {

// A worker raised something other than a syncgrad::Error (std::exception or unknown); the message keeps its what().
class WorkerError : public Error {
 public:
  using Error::Error;
};

// The consumer waited longer than DataLoaderOptions::timeout for the next batch.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// Call only inside a catch block: throws the current exception again as the same syncgrad error type (IOError,
// ValueError, IndexError, ShapeError, DTypeError, DeviceError, AutogradError; other syncgrad errors as Error)
// with "<where>: " in front of its message, or as WorkerError for any other exception.
[[noreturn]] void rethrow_with_context(const std::string& where);

}  // namespace syncgrad::data
