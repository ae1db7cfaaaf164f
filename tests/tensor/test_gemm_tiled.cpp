// The float32 GEMM paths of the CPU matmul kernel: the blocked register tiles (tensor/cpu/gemm_tiled.h: N a
// multiple of 16; rows not a multiple of the tile; inner dimensions beyond one depth block; a transposed b
// through C^T = b^T a^T with rows padded to whole vectors; split over two threads by rows or columns) and
// oneDNN's matmul (tensor/cpu/onednn_gemm.h, from 4M multiply-adds; a linear layer's bias added as it writes
// the result), operands transposed or not, addmm's accumulation, against the float64 product; and products from
// several threads at once.
#include <doctest/doctest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "syncgrad.h"

using namespace syncgrad;

namespace {

double max_rel_diff(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = to_vector<double>(got), w = to_vector<double>(want);
  double worst = 0, scale = 1e-6;
  for (double v : w) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - w[i]) / scale);
  return worst;
}

struct Case {
  int64_t m, k, n;
};

// mm and addmm (alpha = beta = 1, and 0.5 / 2 when `scaled`) of random operands, each transposed or not, against
// the float64 product.
void check_against_float64(const Case& c, Generator& gen, bool scaled) {
  for (bool a_transposed : {false, true}) {
    for (bool b_transposed : {false, true}) {
      INFO("m=" << c.m << " k=" << c.k << " n=" << c.n << " a^T " << a_transposed << " b^T " << b_transposed);
      Tensor a = a_transposed ? raw::transpose(randn({c.k, c.m}, {}, &gen), 0, 1) : randn({c.m, c.k}, {}, &gen);
      Tensor b = b_transposed ? raw::transpose(randn({c.n, c.k}, {}, &gen), 0, 1) : randn({c.k, c.n}, {}, &gen);
      Tensor bias = randn({c.n}, {}, &gen);
      Tensor a64 = raw::to(a, DType::f64), b64 = raw::to(b, DType::f64);
      CHECK(max_rel_diff(raw::mm(a, b), raw::mm(a64, b64)) < 1e-5);
      CHECK(max_rel_diff(raw::addmm(bias, a, b), raw::addmm(raw::to(bias, DType::f64), a64, b64)) < 1e-5);
      if (scaled) {
        CHECK(max_rel_diff(raw::addmm(bias, a, b, 0.5, 2.0),
                           raw::addmm(raw::to(bias, DType::f64), a64, b64, 0.5, 2.0)) < 1e-5);
      }
    }
  }
}

}  // namespace

TEST_CASE("float32 mm/addmm on linear-layer shapes equals the float64 product") {
  Generator gen(3);
  // Row-major b takes the path from 16 rows; a transposed b below 512 rows goes through C^T (any N >= 16), from
  // 512 rows on it is copied row-major first.
  for (Case c : {Case{37, 130, 48}, Case{200, 600, 80}, Case{16, 16, 16}, Case{250, 1100, 64}, Case{7, 40, 32},
                 Case{64, 64, 50}, Case{600, 130, 48}, Case{515, 40, 96}, Case{64, 784, 256},
                 Case{100, 300, 20}, Case{17, 16, 10}}) {
    check_against_float64(c, gen, true);
  }
}

TEST_CASE("float32 products on oneDNN (from 4M multiply-adds) and on the tiles split over two threads") {
  Generator gen(5);
  const int threads = get_num_threads();
  set_num_threads(2);
  // Below 4M multiply-adds on the tiles: one row block split by columns (48 x 272), two uneven row blocks
  // (130 rows), two whole ones (256 rows); from 4M on oneDNN, with a long row-major b left to Eigen (n 2048).
  for (Case c : {Case{48, 300, 272}, Case{130, 100, 288}, Case{256, 60, 256}, Case{512, 768, 300},
                 Case{200, 640, 96}, Case{64, 40, 2048}}) {
    check_against_float64(c, gen, false);
  }
  set_num_threads(threads);
}

TEST_CASE("products run from several threads at once equal the same products run one at a time") {
  // DataParallel's replicas multiply on their own threads; oneDNN's shared scratchpad once mixed their results.
  Generator gen(9);
  std::vector<Tensor> a, b, expected;
  for (int t = 0; t < 4; ++t) {
    a.push_back(randn({512, 384}, {}, &gen));
    b.push_back(raw::transpose(randn({256, 384}, {}, &gen), 0, 1));
    expected.push_back(raw::mm(a.back(), b.back()));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        const Tensor got = raw::mm(a[t], b[t]);
        if (to_vector<float>(got) != to_vector<float>(expected[t])) ++mismatches[t];
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (int t = 0; t < 4; ++t) CHECK_MESSAGE(mismatches[t] == 0, "thread " << t << ": " << mismatches[t] << " of 20 differ");
}
