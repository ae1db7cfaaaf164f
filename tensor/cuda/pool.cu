// CUDA 2-D pooling over contiguous NCHW tensors with PyTorch's window semantics as the CPU kernels implement
// them (tensor/cpu/pool.cpp): max pooling with argmax indices, average pooling (count_include_pad, ceil_mode
// windows), adaptive average pooling, and their backwards. A thread per output element; the backwards scatter
// into the zeroed input gradient with atomic adds (overlapping windows), so their sums have no fixed order.
#include <cstdint>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/parallel.cuh"
#include "tensor/cuda/pool_kernels.h"

namespace syncgrad::cuda {
namespace {

__host__ __device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// The input positions [begin, end) of window i under a dilation step; begin is moved past the padding.
struct Span {
  int64_t begin, end;
};

__host__ __device__ __forceinline__ Span dilated_span(int64_t i, int64_t kernel, int64_t stride, int64_t padding,
                                                      int64_t dilation, int64_t size) {
  int64_t begin = i * stride - padding;
  const int64_t end = min64(begin + (kernel - 1) * dilation + 1, size);
  if (begin < 0) begin += ((-begin + dilation - 1) / dilation) * dilation;
  return {begin, end};
}

// One average-pooling window: the clipped input box and the divisor PyTorch uses for it.
struct AvgWindow {
  int64_t y0, y1, x0, x1, divisor;
  __host__ __device__ bool empty() const { return y0 >= y1 || x0 >= x1; }
};

__host__ __device__ __forceinline__ AvgWindow avg_window(int64_t oy, int64_t ox, const PoolDims& d,
                                                         const PoolWindow& p) {
  int64_t y0 = oy * p.stride_h - p.pad_h, x0 = ox * p.stride_w - p.pad_w;
  int64_t y1 = min64(y0 + p.kernel_h, d.h + p.pad_h), x1 = min64(x0 + p.kernel_w, d.w + p.pad_w);
  const int64_t padded_size = (y1 - y0) * (x1 - x0);
  y0 = max64(y0, 0);
  x0 = max64(x0, 0);
  y1 = min64(y1, d.h);
  x1 = min64(x1, d.w);
  return {y0, y1, x0, x1, p.count_include_pad ? padded_size : (y1 - y0) * (x1 - x0)};
}

// Adaptive window i of `out` cells over `in` elements: [floor(i * in / out), ceil((i + 1) * in / out)).
__host__ __device__ __forceinline__ Span adaptive_span(int64_t i, int64_t out, int64_t in) {
  return {(i * in) / out, ((i + 1) * in + out - 1) / out};
}

template <class T>
void max_pool_typed(T* out, int64_t* indices, const T* input, PoolDims d, PoolWindow p, cudaStream_t stream) {
  using M = opmath_t<T>;
  const M lowest = -infinity<M>();
  for_each_index(d.planes * d.oh * d.ow, stream, [=] SG_LAMBDA(int64_t o) {
    const int64_t plane = o / (d.oh * d.ow), oy = (o / d.ow) % d.oh, ox = o % d.ow;
    const T* in = input + plane * d.h * d.w;
    const Span rows = dilated_span(oy, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, d.h);
    const Span cols = dilated_span(ox, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, d.w);
    // The window's first element until a larger one (or a NaN) is seen; taps in row-major order.
    M best = lowest;
    int64_t where = rows.begin < rows.end && cols.begin < cols.end ? rows.begin * d.w + cols.begin : -1;
    for (int64_t iy = rows.begin; iy < rows.end; iy += p.dilation_h) {
      for (int64_t ix = cols.begin; ix < cols.end; ix += p.dilation_w) {
        const M v = static_cast<M>(op_value(in[iy * d.w + ix]));
        if (v > best || v != v) {
          best = v;
          where = iy * d.w + ix;
        }
      }
    }
    out[o] = convert<T>(best);
    indices[o] = where;
  });
}

template <class T>
void max_pool_backward_typed(T* grad_input, const T* grad_out, const int64_t* indices, PoolDims d,
                             cudaStream_t stream) {
  for_each_index(d.planes * d.oh * d.ow, stream, [=] SG_LAMBDA(int64_t o) {
    if (indices[o] < 0) return;
    const int64_t plane = o / (d.oh * d.ow);
    atomic_add(&grad_input[plane * d.h * d.w + indices[o]], grad_out[o]);
  });
}

template <class T>
void avg_pool_typed(T* out, const T* input, PoolDims d, PoolWindow p, cudaStream_t stream) {
  using M = opmath_t<T>;
  for_each_index(d.planes * d.oh * d.ow, stream, [=] SG_LAMBDA(int64_t o) {
    const int64_t plane = o / (d.oh * d.ow), oy = (o / d.ow) % d.oh, ox = o % d.ow;
    const T* in = input + plane * d.h * d.w;
    const AvgWindow win = avg_window(oy, ox, d, p);
    M sum = 0;
    for (int64_t iy = win.y0; iy < win.y1; ++iy) {
      for (int64_t ix = win.x0; ix < win.x1; ++ix) sum += static_cast<M>(op_value(in[iy * d.w + ix]));
    }
    out[o] = convert<T>(win.empty() ? M(0) : sum / static_cast<M>(win.divisor));
  });
}

template <class T>
void avg_pool_backward_typed(T* grad_input, const T* grad_out, PoolDims d, PoolWindow p, cudaStream_t stream) {
  using M = opmath_t<T>;
  for_each_index(d.planes * d.oh * d.ow, stream, [=] SG_LAMBDA(int64_t o) {
    const int64_t plane = o / (d.oh * d.ow), oy = (o / d.ow) % d.oh, ox = o % d.ow;
    const AvgWindow win = avg_window(oy, ox, d, p);
    if (win.empty()) return;
    const T share = convert<T>(static_cast<M>(op_value(grad_out[o])) / static_cast<M>(win.divisor));
    T* dst = grad_input + plane * d.h * d.w;
    for (int64_t iy = win.y0; iy < win.y1; ++iy) {
      for (int64_t ix = win.x0; ix < win.x1; ++ix) atomic_add(&dst[iy * d.w + ix], share);
    }
  });
}

template <class T>
void adaptive_avg_pool_typed(T* out, const T* input, PoolDims d, cudaStream_t stream) {
  using M = opmath_t<T>;
  for_each_index(d.planes * d.oh * d.ow, stream, [=] SG_LAMBDA(int64_t o) {
    const int64_t plane = o / (d.oh * d.ow), oy = (o / d.ow) % d.oh, ox = o % d.ow;
    const T* in = input + plane * d.h * d.w;
    const Span rows = adaptive_span(oy, d.oh, d.h), cols = adaptive_span(ox, d.ow, d.w);
    M sum = 0;
    for (int64_t iy = rows.begin; iy < rows.end; ++iy) {
      for (int64_t ix = cols.begin; ix < cols.end; ++ix) sum += static_cast<M>(op_value(in[iy * d.w + ix]));
    }
    const int64_t count = (rows.end - rows.begin) * (cols.end - cols.begin);
    out[o] = convert<T>(sum / static_cast<M>(count));
  });
}

template <class T>
void adaptive_avg_pool_backward_typed(T* grad_input, const T* grad_out, PoolDims d, cudaStream_t stream) {
  using M = opmath_t<T>;
  for_each_index(d.planes * d.oh * d.ow, stream, [=] SG_LAMBDA(int64_t o) {
    const int64_t plane = o / (d.oh * d.ow), oy = (o / d.ow) % d.oh, ox = o % d.ow;
    const Span rows = adaptive_span(oy, d.oh, d.h), cols = adaptive_span(ox, d.ow, d.w);
    const int64_t count = (rows.end - rows.begin) * (cols.end - cols.begin);
    const T share = convert<T>(static_cast<M>(op_value(grad_out[o])) / static_cast<M>(count));
    T* dst = grad_input + plane * d.h * d.w;
    for (int64_t iy = rows.begin; iy < rows.end; ++iy) {
      for (int64_t ix = cols.begin; ix < cols.end; ++ix) atomic_add(&dst[iy * d.w + ix], share);
    }
  });
}

}  // namespace

void launch_max_pool2d(DType dtype, void* out, int64_t* indices, const void* input, PoolDims dims, PoolWindow window,
                       cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    max_pool_typed<T>(static_cast<T*>(out), indices, static_cast<const T*>(input), dims, window, stream);
  });
}

void launch_max_pool2d_backward(DType dtype, void* grad_input, const void* grad_out, const int64_t* indices,
                                PoolDims dims, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    max_pool_backward_typed<T>(static_cast<T*>(grad_input), static_cast<const T*>(grad_out), indices, dims, stream);
  });
}

void launch_avg_pool2d(DType dtype, void* out, const void* input, PoolDims dims, PoolWindow window,
                       cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    avg_pool_typed<T>(static_cast<T*>(out), static_cast<const T*>(input), dims, window, stream);
  });
}

void launch_avg_pool2d_backward(DType dtype, void* grad_input, const void* grad_out, PoolDims dims, PoolWindow window,
                                cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    avg_pool_backward_typed<T>(static_cast<T*>(grad_input), static_cast<const T*>(grad_out), dims, window, stream);
  });
}

void launch_adaptive_avg_pool2d(DType dtype, void* out, const void* input, PoolDims dims, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    adaptive_avg_pool_typed<T>(static_cast<T*>(out), static_cast<const T*>(input), dims, stream);
  });
}

void launch_adaptive_avg_pool2d_backward(DType dtype, void* grad_input, const void* grad_out, PoolDims dims,
                                         cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    adaptive_avg_pool_backward_typed<T>(static_cast<T*>(grad_input), static_cast<const T*>(grad_out), dims, stream);
  });
}

}  // namespace syncgrad::cuda
