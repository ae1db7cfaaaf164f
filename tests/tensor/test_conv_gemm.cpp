// The register-tiled GEMM under the conv, Winograd, attention and tiled linear kernels (tensor/cpu/conv_gemm.h)
// against a float64 product, for every tile shape those kernels ask for: row counts that leave every tail
// (m % MR from 1 to MR - 1), column counts of 1 to NV + 2 vectors (the narrower column groups), overwrite and
// accumulate, row and column biases, A read in place transposed (StridedA) and through offsets (OffsetA). On
// AVX-512 the tiles run as asked; elsewhere as the shape that fits 16 registers (TileShape), which this checks
// is the same product.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "tensor/cpu/conv_gemm.h"

using namespace syncgrad::cpu::conv_gemm;

namespace {

template <class T>
std::vector<T> pattern(int64_t n, double step) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(static_cast<double>(i) * step));
  return v;
}

// The largest |got - want| over C (m, n) for C = A B (+ C) (+ biases), A given by element(i, k).
template <class T, class Element>
double worst_error(const std::vector<T>& got, const std::vector<T>& before, Element element, const std::vector<T>& b,
                   int64_t m, int64_t n, int64_t k, const Epilogue<T>& e) {
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = e.accumulate ? before[i * n + j] : 0.0;
      if (e.row_bias != nullptr) want += e.row_bias[i];
      if (e.col_bias != nullptr) want += e.col_bias[j];
      for (int64_t x = 0; x < k; ++x) want += static_cast<double>(element(i, x)) * b[x * n + j];
      worst = std::max(worst, std::abs(want - got[i * n + j]));
    }
  }
  return worst;
}

template <class T, int MR, int NV>
void check_shape() {
  const double tolerance = sizeof(T) == 4 ? 1e-4 : 1e-12;
  for (int64_t m : {int64_t{1}, int64_t{MR - 1}, int64_t{MR}, int64_t{2 * MR + MR / 2 + 1}}) {
    if (m < 1) continue;
    for (int64_t vectors : {int64_t{1}, int64_t{NV}, int64_t{NV + 2}}) {
      const int64_t n = vectors * kLanes<T>;
      for (int64_t k : {1, 7, 40}) {
        for (bool accumulate : {false, true}) {
          INFO(sizeof(T) * 8 << "-bit, tile " << MR << " x " << NV << ", m " << m << ", n " << n << ", k " << k
                             << ", accumulate " << accumulate);
          const std::vector<T> a = pattern<T>(m * k, 0.37), b = pattern<T>(k * n, 0.11);
          const std::vector<T> before = pattern<T>(m * n, 0.05);
          const std::vector<T> row_bias = pattern<T>(m, 0.7), col_bias = pattern<T>(n, 0.3);
          const Epilogue<T> plain{.accumulate = accumulate};
          const Epilogue<T> biased{.accumulate = accumulate, .row_bias = row_bias.data(), .col_bias = col_bias.data()};

          std::vector<T> c = before;  // A (m, k) row-major
          gemm<T, MR, NV>(m, n, k, StridedA<T>{a.data(), k, 1}, b.data(), n, c.data(), n, biased);
          CHECK(worst_error(c, before, [&](int64_t i, int64_t x) { return a[i * k + x]; }, b, m, n, k, biased) <
                tolerance);

          c = before;  // A stored (k, m): read transposed in place
          gemm<T, MR, NV>(m, n, k, StridedA<T>{a.data(), 1, m}, b.data(), n, c.data(), n, plain);
          CHECK(worst_error(c, before, [&](int64_t i, int64_t x) { return a[x * m + i]; }, b, m, n, k, plain) <
                tolerance);

          std::vector<int64_t> offsets(k);  // A (i, x) = a[i + offsets[x]]: columns 3 apart, reversed
          for (int64_t x = 0; x < k; ++x) offsets[x] = 3 * (k - 1 - x);
          const std::vector<T> source = pattern<T>(m + 3 * k, 0.21);
          c = before;
          gemm<T, MR, NV>(m, n, k, OffsetA<T>{source.data(), offsets.data()}, b.data(), n, c.data(), n, plain);
          CHECK(worst_error(c, before, [&](int64_t i, int64_t x) { return source[i + offsets[x]]; }, b, m, n, k,
                            plain) < tolerance);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("conv_gemm: every tile shape the kernels use equals the float64 product") {
  check_shape<float, 6, 4>();
  check_shape<float, 12, 2>();
  check_shape<float, 8, 3>();
  check_shape<float, 8, 2>();
  check_shape<float, 7, 2>();
  check_shape<float, 6, 2>();
  check_shape<double, 8, 3>();
  check_shape<double, 6, 4>();
  check_shape<double, 7, 2>();
}

TEST_CASE("conv_gemm: the tile a target runs fits its registers") {
  // AVX-512 (one register per 64-byte vector) runs the requested shape; narrower targets 12 accumulators.
  if (kRegistersPerVec == 1) {
    CHECK(TileShape<6, 4>::rows == 6);
    CHECK(TileShape<6, 4>::vectors == 4);
  } else {
    CHECK(TileShape<6, 4>::rows * TileShape<6, 4>::vectors * kRegistersPerVec == 12);
    CHECK(TileShape<12, 2>::rows * TileShape<12, 2>::vectors * kRegistersPerVec == 12);
  }
}
