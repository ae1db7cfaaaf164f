// Loop drivers for CPU elementwise kernels: map1/map2/map3 apply an element function to one, two or three
// inputs and store the result in `out`; every operand has out's shape (inputs already expanded, so a
// broadcast input has stride 0). When `out` is contiguous and each input is contiguous or a single value
// broadcast everywhere, a flat loop runs that the compiler vectorises, split across the intra-op threads for
// big tensors; any other layout goes through for_each_strided.
#pragma once

#include <array>
#include <cstdint>

#include "tensor/cpu/loops.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {

// Elements per thread below which a flat loop stays on the calling thread.
inline constexpr int64_t kElementwiseGrain = 1 << 17;

// True when every element of t is the same memory location (a scalar expanded to t's shape).
inline bool is_broadcast_scalar(const Tensor& t) {
  const Shape& sizes = t.sizes();
  const Shape& strides = t.strides();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && strides[d] != 0) return false;
  }
  return true;
}

// Runs body(begin, end) over [0, n), on several threads when n is at least two grains (elements per thread;
// smaller for loops that do more work per element).
template <class Body>
void run_flat(int64_t n, const Body& body, int64_t grain = kElementwiseGrain) {
  if (n < 2 * grain || get_num_threads() == 1) {
    body(int64_t{0}, n);
  } else {
    parallel_for(n, grain, body);
  }
}

template <class Out, class In, class F>
void map1(const Tensor& out, const Tensor& in, F f) {
  if (out.is_contiguous() && in.is_contiguous()) {
    Out* __restrict o = static_cast<Out*>(out.data_ptr());
    const In* __restrict x = static_cast<const In*>(in.data_ptr());
    run_flat(out.numel(), [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = f(x[i]);
    });
    return;
  }
  for_each_strided<2>(out.sizes(), {static_cast<char*>(out.data_ptr()), static_cast<char*>(in.data_ptr())},
                      {&out, &in}, [&f](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const In*>(p[1] + i * s[1]));
                        }
                      });
}

template <class Out, class A, class B, class F>
void map2(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  Out* __restrict o = static_cast<Out*>(out.data_ptr());
  const A* __restrict x = static_cast<const A*>(a.data_ptr());
  const B* __restrict y = static_cast<const B*>(b.data_ptr());
  if (out.is_contiguous()) {
    bool a_dense = a.is_contiguous(), b_dense = b.is_contiguous();
    if (a_dense && b_dense) {
      run_flat(out.numel(), [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = f(x[i], y[i]);
      });
      return;
    }
    if (a_dense && is_broadcast_scalar(b)) {
      const B yv = *y;
      run_flat(out.numel(), [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = f(x[i], yv);
      });
      return;
    }
    if (b_dense && is_broadcast_scalar(a)) {
      const A xv = *x;
      run_flat(out.numel(), [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = f(xv, y[i]);
      });
      return;
    }
  }
  for_each_strided<3>(out.sizes(),
                      {static_cast<char*>(out.data_ptr()), static_cast<char*>(a.data_ptr()),
                       static_cast<char*>(b.data_ptr())},
                      {&out, &a, &b}, [&f](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
                        if (s[0] == sizeof(Out) && s[1] == sizeof(A) && s[2] == 0) {
                          Out* po = reinterpret_cast<Out*>(p[0]);
                          const A* pa = reinterpret_cast<const A*>(p[1]);
                          const B bv = *reinterpret_cast<const B*>(p[2]);
                          for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], bv);
                          return;
                        }
                        for (int64_t i = 0; i < n; ++i) {
                          *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const A*>(p[1] + i * s[1]),
                                                                       *reinterpret_cast<const B*>(p[2] + i * s[2]));
                        }
                      });
}

template <class Out, class A, class B, class C, class F>
void map3(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  if (out.is_contiguous() && a.is_contiguous() && b.is_contiguous() && c.is_contiguous()) {
    Out* __restrict o = static_cast<Out*>(out.data_ptr());
    const A* __restrict x = static_cast<const A*>(a.data_ptr());
    const B* __restrict y = static_cast<const B*>(b.data_ptr());
    const C* __restrict z = static_cast<const C*>(c.data_ptr());
    run_flat(out.numel(), [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = f(x[i], y[i], z[i]);
    });
    return;
  }
  for_each_strided<4>(out.sizes(),
                      {static_cast<char*>(out.data_ptr()), static_cast<char*>(a.data_ptr()),
                       static_cast<char*>(b.data_ptr()), static_cast<char*>(c.data_ptr())},
                      {&out, &a, &b, &c},
                      [&f](const std::array<char*, 4>& p, const std::array<int64_t, 4>& s, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const A*>(p[1] + i * s[1]),
                                                                       *reinterpret_cast<const B*>(p[2] + i * s[2]),
                                                                       *reinterpret_cast<const C*>(p[3] + i * s[3]));
                        }
                      });
}

}  // namespace syncgrad::cpu
