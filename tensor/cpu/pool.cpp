// CPU pooling kernels (max, average, adaptive average, and their backwards) over contiguous NCHW tensors.
// Each (n, c) plane is independent, so the planes are split across the intra-op threads; half types
// accumulate in float. The CNNs' 2x2/2 max pooling has its own path (max_pool_2x2.h on AVX-512), forward and
// backward; max pooling's backward writes every element of its gradient plane.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "tensor/check.h"
#include "tensor/cpu/max_pool_2x2.h"
#include "tensor/cpu/visit.h"
#include "tensor/cpu/window.h"
#include "tensor/ops/pool.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

// Geometry shared by the kernels: plane counts and sizes of input (N, C, H, W) and output (N, C, OH, OW).
struct PlaneShape {
  int64_t planes, h, w, oh, ow;
  int64_t in_plane() const { return h * w; }
  int64_t out_plane() const { return oh * ow; }
};

PlaneShape plane_shape(const Shape& input, const Shape& output) {
  return {input[0] * input[1], input[2], input[3], output[2], output[3]};
}

// Runs body(p) for every plane p; a thread task gets enough planes for about 64k element visits.
template <class Body>
void for_planes(const PlaneShape& s, int64_t work_per_plane, Body body) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, work_per_plane));
  parallel_for(s.planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) body(p);
  });
}

// The input rows [begin, end) of window i under a dilation step: begin is moved past the top padding.
struct Span {
  int64_t begin, end;
};

Span dilated_span(int64_t i, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation, int64_t size) {
  int64_t begin = i * stride - padding;
  const int64_t end = std::min(begin + (kernel - 1) * dilation + 1, size);
  if (begin < 0) begin += ((-begin + dilation - 1) / dilation) * dilation;
  return {begin, end};
}

// 2x2 windows with stride 2, no padding or dilation, for planes [first, last). On AVX-512 machines float and the
// half types go through the vector rows of max_pool_2x2.h; otherwise each output row compares its four window
// values in order (ties keep the first; NaN wins, as in the general path).
template <class T>
void max_pool_2x2(const T* x, T* y, int64_t* idx, int64_t first, int64_t last, const PlaneShape& s) {
  using M = opmath_t<T>;
  const int64_t w = s.w;
  for (int64_t plane = first; plane < last; ++plane) {
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      const T* top = x + plane * s.in_plane() + 2 * oy * w;
      const T* bottom = top + w;
      T* best = y + plane * s.out_plane() + oy * s.ow;
      int64_t* where = idx + plane * s.out_plane() + oy * s.ow;
      const int64_t row_start = 2 * oy * w;
#if SYNCGRAD_MAX_POOL_2X2_AVX512
      if constexpr (!std::is_same_v<T, double>) {
        max_pool_2x2::forward_row(top, bottom, best, where, s.ow, w, row_start);
        continue;
      }
#endif
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const int64_t i0 = row_start + 2 * ox;
        M m = static_cast<M>(top[2 * ox]);
        int64_t at = i0;
        auto visit = [&](M v, int64_t position) {
          if ((v > m) | (v != v)) {
            m = v;
            at = position;
          }
        };
        visit(static_cast<M>(top[2 * ox + 1]), i0 + 1);
        visit(static_cast<M>(bottom[2 * ox]), i0 + w);
        visit(static_cast<M>(bottom[2 * ox + 1]), i0 + w + 1);
        best[ox] = static_cast<T>(m);
        where[ox] = at;
      }
    }
  }
}

void max_pool2d_kernel(const Tensor& out, const Tensor& indices, const Tensor& input, const Pool2dParams& p) {
  const PlaneShape s = plane_shape(input.sizes(), out.sizes());
  visit_floating(input.dtype(), "max_pool2d", [&]<class T>() {
    using M = opmath_t<T>;
    const T* x = static_cast<const T*>(input.data_ptr());
    T* y = static_cast<T*>(out.data_ptr());
    int64_t* idx = indices.data_ptr<int64_t>();
    // Column geometry, the same for every row and plane: each window's first input column (-1: none) and,
    // per column tap kj, the output columns [lo, hi) for which that tap is inside the input.
    std::vector<int64_t> first_col(static_cast<size_t>(s.ow));
    for (int64_t ox = 0; ox < s.ow; ++ox) {
      const Span cols = dilated_span(ox, p.kernel.w, p.stride.w, p.padding.w, p.dilation.w, s.w);
      first_col[ox] = cols.begin < cols.end ? cols.begin : -1;
    }
    std::vector<std::pair<int64_t, int64_t>> tap_range;
    for (int64_t kj = 0; kj < p.kernel.w; ++kj) {
      tap_range.push_back(valid_range(kj * p.dilation.w - p.padding.w, p.stride.w, s.w, s.ow));
    }
    const bool two_by_two = p.kernel.h == 2 && p.kernel.w == 2 && p.stride.h == 2 && p.stride.w == 2 &&
                            p.padding.h == 0 && p.padding.w == 0 && p.dilation.h == 1 && p.dilation.w == 1 &&
                            2 * s.oh <= s.h && 2 * s.ow <= s.w;  // no partial (ceil_mode) windows
    if (two_by_two) {
      // The CNNs' 2x2/2 pooling: every window lies inside the input.
      const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / (4 * s.out_plane()));
      parallel_for(s.planes, grain, [&](int64_t begin, int64_t end) { max_pool_2x2(x, y, idx, begin, end, s); });
      return;
    }
    for_planes(s, s.out_plane() * p.kernel.h * p.kernel.w, [&](int64_t plane) {
      // A whole output row at a time: for each window tap (row iy, column tap kj) update every output column
      // in a branch-free loop over ox. Taps are visited in window row-major order, so the first maximum wins;
      // each window starts at -inf with the position of its first element (-1 if it covers no input).
      const T* in = x + plane * s.in_plane();
      const int64_t width = s.w, stride = p.stride.w;
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        T* best = y + plane * s.out_plane() + oy * s.ow;
        int64_t* where = idx + plane * s.out_plane() + oy * s.ow;
        const Span rows = dilated_span(oy, p.kernel.h, p.stride.h, p.padding.h, p.dilation.h, s.h);
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          best[ox] = static_cast<T>(-std::numeric_limits<float>::infinity());
          where[ox] = rows.begin < rows.end && first_col[ox] >= 0 ? rows.begin * width + first_col[ox] : -1;
        }
        for (int64_t iy = rows.begin; iy < rows.end; iy += p.dilation.h) {
          const T* in_row = in + iy * width;
          const int64_t row_start = iy * width;
          for (int64_t kj = 0; kj < p.kernel.w; ++kj) {
            const int64_t x0 = kj * p.dilation.w - p.padding.w;
            const auto [lo, hi] = tap_range[kj];
            for (int64_t ox = lo; ox < hi; ++ox) {
              const M v = static_cast<M>(in_row[ox * stride + x0]);
              const bool take = (v > static_cast<M>(best[ox])) | (v != v);  // v != v: NaN wins
              best[ox] = take ? static_cast<T>(v) : best[ox];
              where[ox] = take ? row_start + ox * stride + x0 : where[ox];
            }
          }
        }
      }
    });
  });
}

// Scatter-adds one plane's gradients gy (out_plane) to their argmaxes in gx (in_plane, written whole): the half
// types sum in a float plane, rounded once. -1 marks a window without input; returns the first index outside
// the plane, or -1 when there is none (such a gradient is dropped).
template <class T>
int64_t max_pool_scatter_plane(const T* gy, const int64_t* idx, T* gx, const PlaneShape& s) {
  int64_t bad = -1;
  auto inside = [&](int64_t i) {
    if (i >= 0 && i < s.in_plane()) return true;
    if (i != -1 && bad == -1) bad = i;
    return false;
  };
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    std::fill(gx, gx + s.in_plane(), T(0));
    for (int64_t o = 0; o < s.out_plane(); ++o) {
      if (inside(idx[o])) gx[idx[o]] += gy[o];
    }
  } else {
    thread_local std::vector<float> sums;
    sums.assign(static_cast<size_t>(s.in_plane()), 0.0f);
    for (int64_t o = 0; o < s.out_plane(); ++o) {
      if (inside(idx[o])) sums[static_cast<size_t>(idx[o])] += convert<float>(gy[o]);
    }
    for (int64_t i = 0; i < s.in_plane(); ++i) gx[i] = convert<T>(sums[static_cast<size_t>(i)]);
  }
  return bad;
}

void max_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_out, const Tensor& indices) {
  const PlaneShape s = plane_shape(grad_input.sizes(), grad_out.sizes());
  std::atomic<int64_t> bad_index{-1};  // an index outside its plane, reported after the threads (not thrown in them)
  visit_floating(grad_out.dtype(), "max_pool2d_backward", [&]<class T>() {
    const T* gy = static_cast<const T*>(grad_out.data_ptr());
    const int64_t* idx = indices.data_ptr<int64_t>();
    T* gx = static_cast<T*>(grad_input.data_ptr());
    for_planes(s, s.in_plane(), [&](int64_t plane) {
      const T* plane_gy = gy + plane * s.out_plane();
      const int64_t* plane_idx = idx + plane * s.out_plane();
      T* plane_gx = gx + plane * s.in_plane();
#if SYNCGRAD_MAX_POOL_2X2_AVX512
      if constexpr (!std::is_same_v<T, double>) {
        if (max_pool_2x2::backward_plane(plane_gy, plane_idx, plane_gx, s.h, s.w, s.oh, s.ow)) return;
      }
#endif
      const int64_t bad = max_pool_scatter_plane(plane_gy, plane_idx, plane_gx, s);
      if (bad != -1) bad_index.store(bad);
    });
  });
  SYNCGRAD_CHECK(bad_index.load() == -1, IndexError, "max_pool2d_backward: index ", bad_index.load(),
                 " is outside the input plane of ", s.in_plane(), " elements (", s.h, " x ", s.w,
                 "); indices must come from max_pool2d_with_indices on an input of this shape");
}

// One average-pooling window: the clipped input box and the divisor PyTorch uses for it.
struct AvgWindow {
  int64_t y0, y1, x0, x1;
  int64_t divisor;
  bool empty() const { return y0 >= y1 || x0 >= x1; }
};

AvgWindow avg_window(int64_t oy, int64_t ox, const PlaneShape& s, const Pool2dParams& p) {
  int64_t y0 = oy * p.stride.h - p.padding.h, x0 = ox * p.stride.w - p.padding.w;
  int64_t y1 = std::min(y0 + p.kernel.h, s.h + p.padding.h), x1 = std::min(x0 + p.kernel.w, s.w + p.padding.w);
  const int64_t padded_size = (y1 - y0) * (x1 - x0);
  y0 = std::max<int64_t>(y0, 0);
  x0 = std::max<int64_t>(x0, 0);
  y1 = std::min(y1, s.h);
  x1 = std::min(x1, s.w);
  return {y0, y1, x0, x1, p.count_include_pad ? padded_size : (y1 - y0) * (x1 - x0)};
}

void avg_pool2d_kernel(const Tensor& out, const Tensor& input, const Pool2dParams& p) {
  const PlaneShape s = plane_shape(input.sizes(), out.sizes());
  visit_floating(input.dtype(), "avg_pool2d", [&]<class T>() {
    using M = opmath_t<T>;
    const T* x = static_cast<const T*>(input.data_ptr());
    T* y = static_cast<T*>(out.data_ptr());
    for_planes(s, s.out_plane() * p.kernel.h * p.kernel.w, [&](int64_t plane) {
      const T* in = x + plane * s.in_plane();
      T* dst = y + plane * s.out_plane();
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          const AvgWindow win = avg_window(oy, ox, s, p);
          M sum = 0;
          for (int64_t iy = win.y0; iy < win.y1; ++iy) {
            for (int64_t ix = win.x0; ix < win.x1; ++ix) sum += static_cast<M>(in[iy * s.w + ix]);
          }
          dst[oy * s.ow + ox] = static_cast<T>(win.empty() ? M(0) : sum / static_cast<M>(win.divisor));
        }
      }
    });
  });
}

void avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_out, const Pool2dParams& p) {
  const PlaneShape s = plane_shape(grad_input.sizes(), grad_out.sizes());
  visit_floating(grad_out.dtype(), "avg_pool2d_backward", [&]<class T>() {
    using M = opmath_t<T>;
    const T* gy = static_cast<const T*>(grad_out.data_ptr());
    T* gx = static_cast<T*>(grad_input.data_ptr());
    for_planes(s, s.out_plane() * p.kernel.h * p.kernel.w, [&](int64_t plane) {
      const T* src = gy + plane * s.out_plane();
      T* dst = gx + plane * s.in_plane();
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          const AvgWindow win = avg_window(oy, ox, s, p);
          if (win.empty()) continue;
          const M share = static_cast<M>(src[oy * s.ow + ox]) / static_cast<M>(win.divisor);
          for (int64_t iy = win.y0; iy < win.y1; ++iy) {
            for (int64_t ix = win.x0; ix < win.x1; ++ix) {
              T& g = dst[iy * s.w + ix];
              g = static_cast<T>(static_cast<M>(g) + share);
            }
          }
        }
      }
    });
  });
}

// Adaptive window i of `out` cells over `in` elements: [floor(i * in / out), ceil((i + 1) * in / out)).
Span adaptive_span(int64_t i, int64_t out, int64_t in) { return {(i * in) / out, ((i + 1) * in + out - 1) / out}; }

void adaptive_avg_pool2d_kernel(const Tensor& out, const Tensor& input) {
  const PlaneShape s = plane_shape(input.sizes(), out.sizes());
  visit_floating(input.dtype(), "adaptive_avg_pool2d", [&]<class T>() {
    using M = opmath_t<T>;
    const T* x = static_cast<const T*>(input.data_ptr());
    T* y = static_cast<T*>(out.data_ptr());
    for_planes(s, s.in_plane(), [&](int64_t plane) {
      const T* in = x + plane * s.in_plane();
      T* dst = y + plane * s.out_plane();
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        const Span rows = adaptive_span(oy, s.oh, s.h);
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          const Span cols = adaptive_span(ox, s.ow, s.w);
          M sum = 0;
          for (int64_t iy = rows.begin; iy < rows.end; ++iy) {
            for (int64_t ix = cols.begin; ix < cols.end; ++ix) sum += static_cast<M>(in[iy * s.w + ix]);
          }
          const int64_t count = (rows.end - rows.begin) * (cols.end - cols.begin);
          dst[oy * s.ow + ox] = static_cast<T>(sum / static_cast<M>(count));
        }
      }
    });
  });
}

void adaptive_avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_out) {
  const PlaneShape s = plane_shape(grad_input.sizes(), grad_out.sizes());
  visit_floating(grad_out.dtype(), "adaptive_avg_pool2d_backward", [&]<class T>() {
    using M = opmath_t<T>;
    const T* gy = static_cast<const T*>(grad_out.data_ptr());
    T* gx = static_cast<T*>(grad_input.data_ptr());
    for_planes(s, s.in_plane(), [&](int64_t plane) {
      const T* src = gy + plane * s.out_plane();
      T* dst = gx + plane * s.in_plane();
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        const Span rows = adaptive_span(oy, s.oh, s.h);
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          const Span cols = adaptive_span(ox, s.ow, s.w);
          const int64_t count = (rows.end - rows.begin) * (cols.end - cols.begin);
          const M share = static_cast<M>(src[oy * s.ow + ox]) / static_cast<M>(count);
          for (int64_t iy = rows.begin; iy < rows.end; ++iy) {
            for (int64_t ix = cols.begin; ix < cols.end; ++ix) {
              T& g = dst[iy * s.w + ix];
              g = static_cast<T>(static_cast<M>(g) + share);
            }
          }
        }
      }
    });
  });
}

const KernelRegistrar reg_max_pool2d(kernels::max_pool2d, DeviceType::kCPU, &max_pool2d_kernel);
const KernelRegistrar reg_max_pool2d_backward(kernels::max_pool2d_backward, DeviceType::kCPU,
                                              &max_pool2d_backward_kernel);
const KernelRegistrar reg_avg_pool2d(kernels::avg_pool2d, DeviceType::kCPU, &avg_pool2d_kernel);
const KernelRegistrar reg_avg_pool2d_backward(kernels::avg_pool2d_backward, DeviceType::kCPU,
                                              &avg_pool2d_backward_kernel);
const KernelRegistrar reg_adaptive_avg_pool2d(kernels::adaptive_avg_pool2d, DeviceType::kCPU,
                                              &adaptive_avg_pool2d_kernel);
const KernelRegistrar reg_adaptive_avg_pool2d_backward(kernels::adaptive_avg_pool2d_backward, DeviceType::kCPU,
                                                       &adaptive_avg_pool2d_backward_kernel);

}  // namespace
}  // namespace syncgrad::cpu
