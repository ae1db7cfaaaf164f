// CUDA runtime error checking for the CUDA backend module (private: only tensor/cuda/ includes this). Every
// failing runtime call becomes a syncgrad::DeviceError that names the call, the error and where it was made.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace syncgrad::cuda {

// Throws DeviceError("<what> failed: <cudaGetErrorString> (<cudaGetErrorName>) [<file>:<line>]") and clears
// the runtime's last-error state (for non-sticky errors) so later checks do not report it again.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line);

inline void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda_error(err, what, file, line);
}

// "<name>: <description>" for an error code, for messages that do not throw.
std::string cuda_error_text(cudaError_t err);

}  // namespace syncgrad::cuda

// SG_CUDA_CHECK(cudaMalloc(&p, n)) -> DeviceError "cudaMalloc(&p, n) failed: out of memory (...)".
#define SG_CUDA_CHECK(expr) ::syncgrad::cuda::check_cuda((expr), #expr, __FILE__, __LINE__)
