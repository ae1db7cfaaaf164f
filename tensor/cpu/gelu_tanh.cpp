// Tanh-GELU forward and backward on Eigen's packet math over contiguous float32 or bfloat16 (computed in
// float; tanh by Eigen's vectorised rational approximation, a few ulp from std::tanh), split across the
// intra-op threads like the flat elementwise loops. Every element goes through the same packet code (unaligned
// loads, a zero-padded packet for the tail), so results never depend on where a tensor's memory happens to be
// aligned.
#include "tensor/cpu/gelu_tanh.h"

#include <Eigen/Core>
#include <algorithm>
#include <initializer_list>
#include <vector>

#include "tensor/cpu/elementwise_loops.h"
#include "tensor/cpu/half_convert.h"
#include "tensor/cpu/visit.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int64_t kWidth = Eigen::internal::packet_traits<float>::size;
constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kCubic = 0.044715f;

inline Packet splat(float v) { return Eigen::internal::pset1<Packet>(v); }

// tanh(sqrt(2 / pi) (x + 0.044715 x^3))
inline Packet inner_tanh(const Packet& x) {
  using namespace Eigen::internal;
  const Packet cube = pmul(x, pmul(x, x));
  return ptanh(pmul(splat(kSqrt2OverPi), padd(x, pmul(splat(kCubic), cube))));
}

inline Packet gelu(const Packet& x) {
  using namespace Eigen::internal;
  return pmul(pmul(splat(0.5f), x), padd(splat(1.0f), inner_tanh(x)));
}

// g * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 x^2))
inline Packet gelu_grad(const Packet& g, const Packet& x) {
  using namespace Eigen::internal;
  const Packet t = inner_tanh(x);
  const Packet d_inner = pmul(splat(kSqrt2OverPi), padd(splat(1.0f), pmul(splat(3.0f * kCubic), pmul(x, x))));
  const Packet slope = pmul(pmul(splat(0.5f), x), pmul(psub(splat(1.0f), pmul(t, t)), d_inner));
  return pmul(g, padd(pmul(splat(0.5f), padd(splat(1.0f), t)), slope));
}

// p[0 .. n) as a packet (n <= kWidth; missing lanes are 0).
inline Packet load(const float* p, int64_t n) {
  if (n == kWidth) return Eigen::internal::ploadu<Packet>(p);
  float staged[kWidth] = {};
  std::copy(p, p + n, staged);
  return Eigen::internal::ploadu<Packet>(staged);
}

inline void store(float* p, const Packet& v, int64_t n) {
  if (n == kWidth) return Eigen::internal::pstoreu(p, v);
  float staged[kWidth];
  Eigen::internal::pstoreu(staged, v);
  std::copy(staged, staged + n, p);
}

// out[i] = f(a[i], b[i]) for i in [begin, end), a packet at a time (b unused by unary f).
template <class F>
void packets(float* out, const float* a, const float* b, int64_t begin, int64_t end, F f) {
  for (int64_t i = begin; i < end; i += kWidth) {
    const int64_t n = std::min(kWidth, end - i);
    store(out + i, f(load(a + i, n), load(b + i, n)), n);
  }
}

// bfloat16: blocks widened into float32 staging and rounded back with the vectorised conversions of
// half_convert.h, the float loop in between (a packet-by-packet scalar conversion had bfloat16 GELU at ~20x the
// float32 time, 22% of a bfloat16 GPT step).
template <class F>
void packets(bfloat16* out, const bfloat16* a, const bfloat16* b, int64_t begin, int64_t end, F f) {
  constexpr int64_t kBlock = 1024;
  alignas(64) float staged_a[kBlock], staged_b[kBlock], staged_out[kBlock];
  for (int64_t i = begin; i < end; i += kBlock) {
    const int64_t n = std::min(kBlock, end - i);
    bf16_to_float(a + i, staged_a, n);
    if (b != a) bf16_to_float(b + i, staged_b, n);
    packets(staged_out, staged_a, b != a ? staged_b : staged_a, 0, n, f);
    float_to_bf16(staged_out, out + i, n);
  }
}

// Runs the element type's loop: float32 or bfloat16 tensors, all contiguous; false for anything else.
template <class Body>
bool with_element_type(std::initializer_list<const Tensor*> tensors, Body&& body) {
  const DType dtype = (*tensors.begin())->dtype();
  for (const Tensor* t : tensors) {
    if (t->dtype() != dtype || !t->is_contiguous()) return false;
  }
  if (dtype == DType::f32) body(float{});
  else if (dtype == DType::bf16) body(bfloat16{});
  else return false;
  return true;
}

}  // namespace

bool gelu_tanh_contiguous(const Tensor& out, const Tensor& in) {
  return with_element_type({&out, &in}, [&]<class E>(E) {
    E* o = static_cast<E*>(out.data_ptr());
    const E* x = static_cast<const E*>(in.data_ptr());
    run_flat(out.numel(), [=](int64_t begin, int64_t end) {
      packets(o, x, x, begin, end, [](const Packet& v, const Packet&) { return gelu(v); });
    });
  });
}

bool gelu_tanh_backward_contiguous(const Tensor& grad_in, const Tensor& grad_out, const Tensor& x) {
  return with_element_type({&grad_in, &grad_out, &x}, [&]<class E>(E) {
    E* gi = static_cast<E*>(grad_in.data_ptr());
    const E* go = static_cast<const E*>(grad_out.data_ptr());
    const E* xp = static_cast<const E*>(x.data_ptr());
    run_flat(grad_in.numel(), [=](int64_t begin, int64_t end) {
      packets(gi, go, xp, begin, end, [](const Packet& g, const Packet& v) { return gelu_grad(g, v); });
    });
  });
}

void gelu_tanh_backward_rows(float* grad_in, const float* grad_out, const float* x, int64_t rows, int64_t cols,
                             double* column_sums) {
  using namespace Eigen::internal;
  const int64_t column_packets = (cols + kWidth - 1) / kWidth;
  parallel_for(column_packets, 4, [=](int64_t first_packet, int64_t end_packet) {
    const int64_t begin = first_packet * kWidth, end = std::min(cols, end_packet * kWidth);
    std::vector<float> sums(static_cast<size_t>((end_packet - first_packet) * kWidth), 0.0f);  // padded lanes stay 0
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t offset = r * cols;
      for (int64_t j = begin; j < end; j += kWidth) {
        const int64_t n = std::min(kWidth, end - j);
        const Packet grad = gelu_grad(load(grad_out + offset + j, n), load(x + offset + j, n));
        store(grad_in + offset + j, grad, n);
        float* sum = sums.data() + (j - begin);
        pstoreu(sum, padd(ploadu<Packet>(sum), grad));
      }
    }
    if (column_sums == nullptr) return;
    for (int64_t j = begin; j < end; ++j) column_sums[j] += sums[static_cast<size_t>(j - begin)];
  });
}

}  // namespace syncgrad::cpu
