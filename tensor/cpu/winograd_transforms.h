// The Winograd transform matrices of the conv kernels (tensor/cpu/winograd.cpp), one Tiling per kernel size R and
// output tile side m: F(2x2, 3x3) and F(4x4, 3x3) for 3x3 kernels and F(4x4, 5x5) for 5x5, with m x m output tiles
// (m = kOut) and (m + R - 1) x (m + R - 1) input patches. Two minimal filtering algorithms share one input
// transform B^T:
//   F(m x m, RxR)  forward:  Y (m x m) = A^T [(G g G^T) . (B^T d B)] A    g: RxR filter, d: patch
//   F(RxR, m x m)  weights:  Y (RxR) = C^T [(H e H^T) . (B^T d B)] C      e: m x m block of the output gradient
// The weight pair is the transpose of the forward one (C^T = G^T D^-1 and H = D A for a diagonal D of our
// choosing), so both need (m + R - 1)^2 products per tile. Every 2D transform is M X M^T for one 1D line
// transform M (two_sided()); a Tiling holds its five line transforms as function objects, generic over the
// element: those applied per tile (input, output, gradient) run on vectors of 16 tiles' floats, those applied
// once per filter (filter, weight_output) on vectors of 8 filters' doubles.
//
// R = 3, m = 2, points 0, 1, -1, inf (F(2x2, 3x3): 16 products per 4 outputs, 2.25x fewer multiplications than direct):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]                        H = [1 0; .5 .5; .5 -.5; 0 -1]
//   C^T = [1 1 1 0; 0 1 -1 0; 0 1 1 1]
// R = 3, m = 4, points 0, 1, -1, 2, -2, inf (F(4x4, 3x3): 36 products per 16 outputs, 4x fewer):
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
//   G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   H = A, C^T = G^T (as for 5x5)
// R = 5, points 0, 1, -1, 2, -2, 1/2, -1/2, inf (F(4x4, 5x5): 64 products per 16 outputs, 6.25x fewer; B^T is
// the usual F(6x6, 3x3) one):
//   B^T = [1 0 -21/4 0 21/4 0 -1 0; 0 1 1 -17/4 -17/4 1 1 0; 0 -1 1 17/4 -17/4 -1 1 0;
//          0 1/2 1/4 -5/2 -5/4 2 1 0; 0 -1/2 1/4 5/2 -5/4 -2 1 0; 0 2 4 -5/2 -5 1/2 1 0;
//          0 -2 4 5/2 -5 -1/2 1 0; 0 -1 0 21/4 0 -21/4 0 1]
//   A^T = [1 1 1 1 1 1 1 0; 0 1 -1 2 -2 1/2 -1/2 0; 0 1 1 4 4 1/4 1/4 0; 0 1 -1 8 -8 1/8 -1/8 1]
//   G = [1 0 0 0 0; -2/9 (1 1 1 1 1); -2/9 (1 -1 1 -1 1); 1/90 (1 2 4 8 16); 1/90 (1 -2 4 -8 16);
//        1/45 (32 16 8 4 2); 1/45 (32 -16 8 -4 2); 0 0 0 0 1]
//   H = A (powers of two: the per-tile side rounds no more than sums do), C^T = G^T (the fractions, once per
//   filter)
// Measured in float32 against float64 (tests/tensor/test_winograd.cpp): relative error ~5e-6 for the forward and
// the input gradient and ~1e-5 for the weight gradient with 32-64 channels, against ~1e-6 and ~4e-6 for the
// implicit GEMM. Of the 8-point sets 0, +-1 and four of +-2, +-1/2, +-3/2, +-2/3, +-3, +-1/3, the usual
// +-2, +-1/2 is within 15% of the most accurate one. F(2x2, 5x5) (6 points) is 3x more accurate with the
// points 0, +-1, 2, -1/2 but needs 9 products per output instead of 4: 1.7x the GEMM work on 14x14 images.
#pragma once

#include <algorithm>

namespace syncgrad::cpu::winograd {

// M X M^T for X (Q x Q) and a line transform M (P x Q): row(i, x) writes row i of X to x[0, Q); line(src,
// src_step, dst, dst_step) applies M to Q values src[0], src[src_step], ... and writes P values dst[0],
// dst[dst_step], ...; put(i, j, value) takes element (i, j) of the P x P result. Rows are transformed first, so
// that X is never held whole: only X M^T (Q x P).
template <int P, int Q, class T, class Row, class Line, class Put>
[[gnu::always_inline]] inline void two_sided(const Row& row, const Line& line, const Put& put) {
  T mid[Q * P];
#pragma GCC unroll 8
  for (int i = 0; i < Q; ++i) {
    T x[Q];
    row(i, x);
    line(x, 1, mid + i * P, 1);
  }
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j) {
    T column[P];
    line(mid + j, P, column, 1);
#pragma GCC unroll 8
    for (int i = 0; i < P; ++i) put(i, j, column[i]);
  }
}

// out (P x P) = M in M^T for in (Q x Q), both row-major.
template <int P, int Q, class T, class Line>
inline void two_sided(const T* in, T* out, const Line& line) {
  two_sided<P, Q, T>([&](int i, T* x) { std::copy(in + i * Q, in + (i + 1) * Q, x); }, line,
                     [&](int i, int j, const T& value) { out[i * P + j] = value; });
}

template <int R, int M>
struct Tiling;

template <>
struct Tiling<3, 2> {
  static constexpr int kOut = 2;    // output tile side
  static constexpr int kPatch = 4;  // input patch side = transformed tile side

  // B^T: 4 -> 4.
  static constexpr auto input = []<class T>(const T* d, int s, T* o, int t) {
    const T d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s];
    o[0] = d0 - d2;
    o[t] = d1 + d2;
    o[2 * t] = d2 - d1;
    o[3 * t] = d1 - d3;
  };
  // A^T: 4 -> 2.
  static constexpr auto output = []<class T>(const T* m, int s, T* y, int t) {
    const T m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s];
    y[0] = m0 + m1 + m2;
    y[t] = m1 - m2 - m3;
  };
  // H: 2 -> 4.
  static constexpr auto gradient = []<class T>(const T* e, int s, T* u, int t) {
    const T e0 = e[0], e1 = e[s];
    u[0] = e0;
    u[t] = 0.5f * (e0 + e1);
    u[2 * t] = 0.5f * (e0 - e1);
    u[3 * t] = -e1;
  };
  // G: 3 -> 4.
  static constexpr auto filter = []<class T>(const T* g, int s, T* u, int t) {
    const T g0 = g[0], g1 = g[s], g2 = g[2 * s];
    u[0] = g0;
    u[t] = 0.5 * (g0 + g1 + g2);
    u[2 * t] = 0.5 * (g0 - g1 + g2);
    u[3 * t] = g2;
  };
  // C^T: 4 -> 3.
  static constexpr auto weight_output = []<class T>(const T* m, int s, T* w, int t) {
    const T m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s];
    w[0] = m0 + m1 + m2;
    w[t] = m1 - m2;
    w[2 * t] = m1 + m2 + m3;
  };
};

template <>
struct Tiling<3, 4> {
  static constexpr int kOut = 4;    // output tile side
  static constexpr int kPatch = 6;  // input patch side = transformed tile side

  // B^T: 6 -> 6 (rows of the points p and -p share their even and odd halves).
  static constexpr auto input = []<class T>(const T* d, int s, T* o, int t) {
    const T d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s];
    const T even1 = d4 - 4.0f * d2, odd1 = d3 - 4.0f * d1;  // points +-1
    const T even2 = d4 - d2, odd2 = 2.0f * (d3 - d1);       // points +-2
    o[0] = 4.0f * d0 - 5.0f * d2 + d4;
    o[t] = even1 + odd1;
    o[2 * t] = even1 - odd1;
    o[3 * t] = even2 + odd2;
    o[4 * t] = even2 - odd2;
    o[5 * t] = 4.0f * d1 - 5.0f * d3 + d5;
  };
  // A^T: 6 -> 4.
  static constexpr auto output = []<class T>(const T* m, int s, T* y, int t) {
    const T sum1 = m[s] + m[2 * s], diff1 = m[s] - m[2 * s];          // points +-1
    const T sum2 = m[3 * s] + m[4 * s], diff2 = m[3 * s] - m[4 * s];  // points +-2
    y[0] = m[0] + sum1 + sum2;
    y[t] = diff1 + 2.0f * diff2;
    y[2 * t] = sum1 + 4.0f * sum2;
    y[3 * t] = diff1 + 8.0f * diff2 + m[5 * s];
  };
  // H = A: 4 -> 6.
  static constexpr auto gradient = []<class T>(const T* e, int s, T* u, int t) {
    const T e0 = e[0], e1 = e[s], e2 = e[2 * s], e3 = e[3 * s];
    const T even1 = e0 + e2, odd1 = e1 + e3;                        // points +-1
    const T even2 = e0 + 4.0f * e2, odd2 = 2.0f * e1 + 8.0f * e3;  // points +-2
    u[0] = e0;
    u[t] = even1 + odd1;
    u[2 * t] = even1 - odd1;
    u[3 * t] = even2 + odd2;
    u[4 * t] = even2 - odd2;
    u[5 * t] = e3;
  };
  // G: 3 -> 6.
  static constexpr auto filter = []<class T>(const T* g, int s, T* u, int t) {
    constexpr double sixth = 1.0 / 6, twentyfourth = 1.0 / 24;
    const T g0 = g[0], g1 = g[s], g2 = g[2 * s];
    const T even1 = g0 + g2, even2 = g0 + 4 * g2, odd2 = 2 * g1;
    u[0] = 0.25 * g0;
    u[t] = -(even1 + g1) * sixth;
    u[2 * t] = -(even1 - g1) * sixth;
    u[3 * t] = (even2 + odd2) * twentyfourth;
    u[4 * t] = (even2 - odd2) * twentyfourth;
    u[5 * t] = g2;
  };
  // C^T = G^T: 6 -> 3.
  static constexpr auto weight_output = []<class T>(const T* m, int s, T* w, int t) {
    constexpr double sixth = 1.0 / 6, twelfth = 1.0 / 12, twentyfourth = 1.0 / 24;
    const T sum1 = m[s] + m[2 * s], diff1 = m[2 * s] - m[s];          // points +-1
    const T sum2 = m[3 * s] + m[4 * s], diff2 = m[3 * s] - m[4 * s];  // points +-2
    w[0] = 0.25 * m[0] - sum1 * sixth + sum2 * twentyfourth;
    w[t] = diff1 * sixth + diff2 * twelfth;
    w[2 * t] = (sum2 - sum1) * sixth + m[5 * s];
  };
};

template <>
struct Tiling<5, 4> {
  static constexpr int kOut = 4;    // output tile side
  static constexpr int kPatch = 8;  // input patch side = transformed tile side

  // B^T: 8 -> 8, in 26 operations (rows of the points p and -p share their even and odd halves).
  static constexpr auto input = []<class T>(const T* d, int s, T* o, int t) {
    const T d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s], d6 = d[6 * s],
            d7 = d[7 * s];
    const T even1 = d2 + d6 - 4.25f * d4, odd1 = d1 + d5 - 4.25f * d3;                 // points +-1
    const T even2 = d6 + 0.25f * d2 - 1.25f * d4, odd2 = 0.5f * d1 - 2.5f * d3 + 2.0f * d5;  // points +-2
    const T even3 = d6 + 4.0f * d2 - 5.0f * d4, odd3 = 2.0f * d1 - 2.5f * d3 + 0.5f * d5;    // points +-1/2
    o[0] = (d0 - d6) + 5.25f * (d4 - d2);
    o[t] = even1 + odd1;
    o[2 * t] = even1 - odd1;
    o[3 * t] = even2 + odd2;
    o[4 * t] = even2 - odd2;
    o[5 * t] = even3 + odd3;
    o[6 * t] = even3 - odd3;
    o[7 * t] = (d7 - d1) + 5.25f * (d3 - d5);
  };
  // A^T: 8 -> 4.
  static constexpr auto output = []<class T>(const T* m, int s, T* y, int t) {
    const T m0 = m[0], m7 = m[7 * s];
    const T sum1 = m[s] + m[2 * s], diff1 = m[s] - m[2 * s];              // points +-1
    const T sum2 = m[3 * s] + m[4 * s], diff2 = m[3 * s] - m[4 * s];      // points +-2
    const T sum3 = m[5 * s] + m[6 * s], diff3 = m[5 * s] - m[6 * s];      // points +-1/2
    y[0] = m0 + sum1 + sum2 + sum3;
    y[t] = diff1 + 2.0f * diff2 + 0.5f * diff3;
    y[2 * t] = sum1 + 4.0f * sum2 + 0.25f * sum3;
    y[3 * t] = diff1 + 8.0f * diff2 + 0.125f * diff3 + m7;
  };
  // H = A: 4 -> 8.
  static constexpr auto gradient = []<class T>(const T* e, int s, T* u, int t) {
    const T e0 = e[0], e1 = e[s], e2 = e[2 * s], e3 = e[3 * s];
    const T even1 = e0 + e2, odd1 = e1 + e3;                                // points +-1
    const T even2 = e0 + 4.0f * e2, odd2 = 2.0f * e1 + 8.0f * e3;          // points +-2
    const T even3 = e0 + 0.25f * e2, odd3 = 0.5f * e1 + 0.125f * e3;       // points +-1/2
    u[0] = e0;
    u[t] = even1 + odd1;
    u[2 * t] = even1 - odd1;
    u[3 * t] = even2 + odd2;
    u[4 * t] = even2 - odd2;
    u[5 * t] = even3 + odd3;
    u[6 * t] = even3 - odd3;
    u[7 * t] = e3;
  };
  // G: 5 -> 8.
  static constexpr auto filter = []<class T>(const T* g, int s, T* u, int t) {
    constexpr double ninth = 2.0 / 9, ninetieth = 1.0 / 90, fortyfifth = 1.0 / 45;
    const T g0 = g[0], g1 = g[s], g2 = g[2 * s], g3 = g[3 * s], g4 = g[4 * s];
    const T even1 = g0 + g2 + g4, odd1 = g1 + g3;                            // points +-1
    const T even2 = g0 + 4 * g2 + 16 * g4, odd2 = 2 * g1 + 8 * g3;           // points +-2
    const T even3 = 32 * g0 + 8 * g2 + 2 * g4, odd3 = 16 * g1 + 4 * g3;      // points +-1/2
    u[0] = g0;
    u[t] = -(even1 + odd1) * ninth;
    u[2 * t] = -(even1 - odd1) * ninth;
    u[3 * t] = (even2 + odd2) * ninetieth;
    u[4 * t] = (even2 - odd2) * ninetieth;
    u[5 * t] = (even3 + odd3) * fortyfifth;
    u[6 * t] = (even3 - odd3) * fortyfifth;
    u[7 * t] = g4;
  };
  // C^T = G^T: 8 -> 5.
  static constexpr auto weight_output = []<class T>(const T* m, int s, T* w, int t) {
    constexpr double ninth = 2.0 / 9, ninetieth = 1.0 / 90, fortyfifth = 1.0 / 45;
    const T sum1 = (m[s] + m[2 * s]) * -ninth, diff1 = (m[2 * s] - m[s]) * ninth;             // points +-1
    const T sum2 = (m[3 * s] + m[4 * s]) * ninetieth, diff2 = (m[3 * s] - m[4 * s]) * ninetieth;  // +-2
    const T sum3 = (m[5 * s] + m[6 * s]) * fortyfifth, diff3 = (m[5 * s] - m[6 * s]) * fortyfifth;  // +-1/2
    w[0] = m[0] + sum1 + sum2 + 32 * sum3;
    w[t] = diff1 + 2 * diff2 + 16 * diff3;
    w[2 * t] = sum1 + 4 * sum2 + 8 * sum3;
    w[3 * t] = diff1 + 8 * diff2 + 4 * diff3;
    w[4 * t] = sum1 + 16 * sum2 + 2 * sum3 + m[7 * s];
  };
};

}  // namespace syncgrad::cpu::winograd
