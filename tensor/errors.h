// Typed exceptions thrown by every layer of syncgrad. Messages name the op, the offending values and a hint.
#pragma once

#include <stdexcept>
#include <string>

namespace syncgrad {

// Base of all syncgrad errors: catch this to handle any library failure.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Incompatible or invalid shapes (broadcasting, matmul inner dims, view on bad strides).
class ShapeError : public Error {
 public:
  using Error::Error;
};

// An op got a dtype it does not support, or two dtypes that cannot be combined.
class DTypeError : public Error {
 public:
  using Error::Error;
};

// A dimension or element index is out of range.
class IndexError : public Error {
 public:
  using Error::Error;
};

// Tensors on different devices, or a device/backend that is unavailable.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// Misuse of the autograd engine (freed graph, non-scalar backward without gradient, in-place on leaf).
class AutogradError : public Error {
 public:
  using Error::Error;
};

// An argument value is invalid (negative size, bad option).
class ValueError : public Error {
 public:
  using Error::Error;
};

// A file-system operation failed (missing file or directory, read-only, disk full); names the path and the
// OS reason.
class IOError : public Error {
 public:
  using Error::Error;
};

}  // namespace syncgrad
