// The launch primitives the op kernels (tensor/cuda/*.cu) are written in, so that each kernel body is
// written once and runs in two builds:
//  - nvcc (the real module): grid-stride CUDA kernels on the caller's stream;
//  - g++ (the emulated test module, tests/cuda/emulation/): plain host loops over the same bodies, so the
//    conformance tests check every body on machines without a GPU.
// Bodies are lambdas marked SG_LAMBDA, e.g. `[=] SG_LAMBDA (int64_t i) { out[i] = ...; }`, and call only
// __host__ __device__ functions (convert.cuh, device_math.cuh). Included only by .cu files.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "tensor/cuda/check.h"
#include "tensor/cuda/kernel_utils.cuh"
#include "tensor/cuda/launch.h"

#if defined(__CUDACC__)
#define SG_LAMBDA __device__
#else
#define SG_LAMBDA
#endif

namespace syncgrad::cuda {

// Element offsets of the K operands at one position of a Geometry<K>.
template <int K>
struct Offsets {
  int64_t at[K];
};

// Offsets of position i of g (row-major over g.sizes), with fast paths for contiguous and 1-d geometries.
template <int K>
__host__ __device__ __forceinline__ Offsets<K> offsets_at(const Geometry<K>& g, int64_t i) {
  Offsets<K> o;
  if (g.contiguous) {
    for (int k = 0; k < K; ++k) o.at[k] = i;
  } else if (g.ndim == 1) {
    for (int k = 0; k < K; ++k) o.at[k] = i * g.strides[k][0];
  } else {
    strided_offsets<K>(g, i, o.at);
  }
  return o;
}

// Threads of the team that reduces one row (a power of two, 32..kMaxRowThreads).
inline constexpr int kMaxRowThreads = 256;

inline int row_threads(int64_t cols) {
  int threads = 32;
  while (threads < kMaxRowThreads && threads < cols) threads *= 2;
  return threads;
}

#if defined(__CUDACC__)

// ---- GPU build ----

// The team of threads (one CUDA block) that handles one row of for_each_row. Every member runs the row body;
// reduce() and all_reduce() must be reached by all members alike (no member may skip one).
class RowTeam {
 public:
  __device__ explicit RowTeam(unsigned char* scratch) : scratch_(scratch) {}

  __device__ int64_t first() const { return threadIdx.x; }
  __device__ int64_t step() const { return blockDim.x; }
  // One member, for writes that happen once per row.
  __device__ bool leader() const { return threadIdx.x == 0; }

  // Combines one value per member; every member gets the result. `combine` must be associative and
  // commutative; the order is fixed by the block size, so results are reproducible.
  template <class T, class Combine>
  __device__ T all_reduce(T value, Combine combine) const {
    static_assert(sizeof(T) % 4 == 0 && sizeof(T) <= 16, "reduction values are 4, 8, 12 or 16 bytes");
    for (unsigned delta = 16; delta > 0; delta /= 2) value = combine(value, shuffle_down(value, delta));
    T* slots = reinterpret_cast<T*>(scratch_);
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    if (lane == 0) slots[warp] = value;
    __syncthreads();
    if (threadIdx.x == 0) {
      T total = slots[0];
      for (unsigned w = 1; w < warps; ++w) total = combine(total, slots[w]);
      slots[0] = total;
    }
    __syncthreads();
    const T result = slots[0];
    __syncthreads();  // the slots are reused by the next reduction
    return result;
  }

  // combine over load(c) for c in [0, count), starting from `init` (an identity of combine).
  template <class T, class Load, class Combine>
  __device__ T reduce(int64_t count, T init, Load load, Combine combine) const {
    T acc = init;
    for (int64_t c = first(); c < count; c += step()) acc = combine(acc, load(c));
    return all_reduce(acc, combine);
  }

  // body(c) for c in [0, count), spread over the members.
  template <class Body>
  __device__ void for_each(int64_t count, Body body) const {
    for (int64_t c = first(); c < count; c += step()) body(c);
  }

 private:
  template <class T>
  __device__ static T shuffle_down(T value, unsigned delta) {
    constexpr int kWords = sizeof(T) / 4;
    uint32_t words[kWords];
    memcpy(words, &value, sizeof(T));
    for (int w = 0; w < kWords; ++w) words[w] = __shfl_down_sync(0xffffffffu, words[w], delta);
    T out;
    memcpy(&out, words, sizeof(T));
    return out;
  }

  unsigned char* scratch_;
};

namespace detail {

template <class F>
__global__ void index_kernel(int64_t n, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

template <int K, class F>
__global__ void offsets_kernel(Geometry<K> g, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel; i += stride) {
    f(offsets_at<K>(g, i));
  }
}

template <class F>
__global__ void rows_kernel(int64_t rows, F f) {
  __shared__ __align__(16) unsigned char scratch[(kMaxRowThreads / 32) * 16];
  RowTeam team(scratch);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) f(team, r);
}

}  // namespace detail

// f(i) for every i in [0, n), one thread per index.
template <class F>
void for_each_index(int64_t n, cudaStream_t stream, F f) {
  if (n <= 0) return;
  detail::index_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(n, f);
  SG_CUDA_CHECK(cudaGetLastError());
}

// f(offsets) for every position of g (offsets of each operand in elements), one thread per position.
template <int K, class F>
void for_each_offset(const Geometry<K>& g, cudaStream_t stream, F f) {
  if (g.numel <= 0) return;
  detail::offsets_kernel<K><<<blocks_for(g.numel), kThreadsPerBlock, 0, stream>>>(g, f);
  SG_CUDA_CHECK(cudaGetLastError());
}

// f(team, r) for every row r in [0, rows), one block per row sized for rows of `cols` elements.
template <class F>
void for_each_row(int64_t rows, int64_t cols, cudaStream_t stream, F f) {
  if (rows <= 0) return;
  constexpr int64_t kMaxBlocks = int64_t{1} << 16;
  const unsigned blocks = static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
  detail::rows_kernel<<<blocks, row_threads(cols), 0, stream>>>(rows, f);
  SG_CUDA_CHECK(cudaGetLastError());
}

#else

// ---- host build (emulated module): the same bodies as sequential loops ----

class RowTeam {
 public:
  int64_t first() const { return 0; }
  int64_t step() const { return 1; }
  bool leader() const { return true; }

  template <class T, class Combine>
  T all_reduce(T value, Combine) const {
    return value;
  }

  template <class T, class Load, class Combine>
  T reduce(int64_t count, T init, Load load, Combine combine) const {
    T acc = init;
    for (int64_t c = 0; c < count; ++c) acc = combine(acc, load(c));
    return acc;
  }

  template <class Body>
  void for_each(int64_t count, Body body) const {
    for (int64_t c = 0; c < count; ++c) body(c);
  }
};

template <class F>
void for_each_index(int64_t n, cudaStream_t, F f) {
  for (int64_t i = 0; i < n; ++i) f(i);
}

template <int K, class F>
void for_each_offset(const Geometry<K>& g, cudaStream_t, F f) {
  for (int64_t i = 0; i < g.numel; ++i) f(offsets_at<K>(g, i));
}

template <class F>
void for_each_row(int64_t rows, int64_t, cudaStream_t, F f) {
  const RowTeam team;
  for (int64_t r = 0; r < rows; ++r) f(team, r);
}

#endif

}  // namespace syncgrad::cuda
