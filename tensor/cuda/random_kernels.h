// Launchers of the counter-based random kernels (random.cu), called by random_ops.cpp. Element i of every
// draw uses Philox(seed, first_counter + i) (tensor/philox.h) exactly as the CPU kernels do, so a seed gives
// the same random numbers, dropout masks included, on the CPU and on any GPU. Operands are contiguous.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace syncgrad::cuda {

// Keeps element i when uniform_double(words 0, 1) >= p: mask = 1 / (1 - p), out = input / (1 - p); else 0.
void launch_dropout(DType dtype, void* out, void* mask, const void* input, int64_t n, double p, uint64_t seed,
                    uint64_t first_counter, cudaStream_t stream);
// low + (high - low) * uniform_double(words 0, 1) (floating dtypes).
void launch_uniform(DType dtype, void* out, int64_t n, double low, double high, uint64_t seed, uint64_t first_counter,
                    cudaStream_t stream);
// Box-Muller on the block's two uniform draws (floating dtypes).
void launch_normal(DType dtype, void* out, int64_t n, double mean, double stddev, uint64_t seed, uint64_t first_counter,
                   cudaStream_t stream);
// low + (64 random bits mod (high - low)) (numeric dtypes).
void launch_randint(DType dtype, void* out, int64_t n, int64_t low, int64_t high, uint64_t seed, uint64_t first_counter,
                    cudaStream_t stream);

}  // namespace syncgrad::cuda
