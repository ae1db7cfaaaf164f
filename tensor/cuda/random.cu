// CUDA counter-based random kernels: dropout, uniform, normal and randint, one Philox block per element
// (tensor/philox.h) with the CPU kernels' formulas (tensor/cpu/{dropout,random}.cpp), so CPU and GPU draw
// identical masks and bit patterns (normal values may differ in the last bit of the double math).
#include <cstdint>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/parallel.cuh"
#include "tensor/cuda/random_kernels.h"
#include "tensor/philox.h"

namespace syncgrad::cuda {
namespace {

constexpr double kTwoPi = 6.283185307179586;

template <class T>
void dropout_typed(T* out, T* mask, const T* input, int64_t n, double p, uint64_t seed, uint64_t first,
                   cudaStream_t stream) {
  using M = opmath_t<T>;
  const M scale = static_cast<M>(p < 1.0 ? 1.0 / (1.0 - p) : 0.0);
  const T scale_t = convert<T>(scale);
  const T zero = convert<T>(M(0));
  for_each_index(n, stream, [=] SG_LAMBDA(int64_t i) {
    const philox::Block b = philox::draw(seed, first + static_cast<uint64_t>(i));
    const bool keep = philox::uniform_double(b.w[0], b.w[1]) >= p;
    mask[i] = keep ? scale_t : zero;
    out[i] = keep ? convert<T>(static_cast<M>(op_value(input[i])) * scale) : zero;
  });
}

template <class T>
void uniform_typed(T* out, int64_t n, double low, double high, uint64_t seed, uint64_t first, cudaStream_t stream) {
  const double span = high - low;
  for_each_index(n, stream, [=] SG_LAMBDA(int64_t i) {
    const philox::Block b = philox::draw(seed, first + static_cast<uint64_t>(i));
    out[i] = convert<T>(low + span * philox::uniform_double(b.w[0], b.w[1]));
  });
}

template <class T>
void normal_typed(T* out, int64_t n, double mean, double stddev, uint64_t seed, uint64_t first, cudaStream_t stream) {
  for_each_index(n, stream, [=] SG_LAMBDA(int64_t i) {
    const philox::Block b = philox::draw(seed, first + static_cast<uint64_t>(i));
    const double u1 = 1.0 - philox::uniform_double(b.w[0], b.w[1]);  // (0, 1]: log is finite
    const double u2 = philox::uniform_double(b.w[2], b.w[3]);
    out[i] = convert<T>(mean + stddev * dmath::sqrt(-2.0 * dmath::log(u1)) * dmath::cos(kTwoPi * u2));
  });
}

template <class T>
void randint_typed(T* out, int64_t n, int64_t low, int64_t high, uint64_t seed, uint64_t first, cudaStream_t stream) {
  const uint64_t range = static_cast<uint64_t>(high - low);
  for_each_index(n, stream, [=] SG_LAMBDA(int64_t i) {
    const philox::Block b = philox::draw(seed, first + static_cast<uint64_t>(i));
    const uint64_t bits = (static_cast<uint64_t>(b.w[0]) << 32) | b.w[1];
    // 64 random bits reduced modulo a range below 2^63: the bias is below 2^-63.
    out[i] = convert<T>(static_cast<double>(low + static_cast<int64_t>(bits % range)));
  });
}

}  // namespace

void launch_dropout(DType dtype, void* out, void* mask, const void* input, int64_t n, double p, uint64_t seed,
                    uint64_t first_counter, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    dropout_typed<T>(static_cast<T*>(out), static_cast<T*>(mask), static_cast<const T*>(input), n, p, seed,
                     first_counter, stream);
  });
}

void launch_uniform(DType dtype, void* out, int64_t n, double low, double high, uint64_t seed, uint64_t first_counter,
                    cudaStream_t stream) {
  visit_floating(dtype,
                 [&]<class T>() { uniform_typed<T>(static_cast<T*>(out), n, low, high, seed, first_counter, stream); });
}

void launch_normal(DType dtype, void* out, int64_t n, double mean, double stddev, uint64_t seed, uint64_t first_counter,
                   cudaStream_t stream) {
  visit_floating(
      dtype, [&]<class T>() { normal_typed<T>(static_cast<T*>(out), n, mean, stddev, seed, first_counter, stream); });
}

void launch_randint(DType dtype, void* out, int64_t n, int64_t low, int64_t high, uint64_t seed, uint64_t first_counter,
                    cudaStream_t stream) {
  visit_numeric(dtype,
                [&]<class T>() { randint_typed<T>(static_cast<T*>(out), n, low, high, seed, first_counter, stream); });
}

}  // namespace syncgrad::cuda
