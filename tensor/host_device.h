// SYNCGRAD_HOST_DEVICE marks the small functions that the CPU kernels (g++) and the CUDA kernels (nvcc) share,
// so that both compute bit-identical results from one definition (tensor/philox.h, tensor/int_pow.h).
#pragma once

#if defined(__CUDACC__)
#define SYNCGRAD_HOST_DEVICE __host__ __device__
#else
#define SYNCGRAD_HOST_DEVICE
#endif
