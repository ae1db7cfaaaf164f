// syncgrad-bench gemm: the float32 GEMM paths side by side on the products of the bundled models' linear layers
// (forward x W^T, input gradient dY W, weight gradient dY^T x): oneDNN's matmul primitive and its BLAS-style
// dnnl_sgemm (tensor/cpu/onednn_gemm.h takes the second for long row-major right operands), the register-tiled
// kernels (tensor/cpu/gemm_tiled.h) and Eigen, alternating, GFLOP/s of the median of
// --reps samples, and which one the GEMM kernel picks. Where oneDNN is not taken (below its size threshold)
// it is called anyway, through a primitive created here, so the threshold can be checked.
//   syncgrad-bench gemm [--threads N] [--reps N]
#include <Eigen/Core>
#include <dnnl.h>
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/count_options.h"
#include "bench/subcommands.h"
#include "syncgrad.h"
#include "tensor/cpu/gemm_tiled.h"
#include "tensor/cpu/onednn_gemm.h"

namespace {

using namespace syncgrad;
using Clock = std::chrono::steady_clock;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct LinearShape {
  const char* model;
  int64_t rows, in, out;  // a linear layer in -> out over `rows` rows
};

// The linear layers of the MLP (batch 64), the default GPT (4 x 128, batch 64 x 128 tokens) and a 12 x 768
// GPT (batch 8 x 64 tokens).
const LinearShape kShapes[] = {
    {"mlp", 64, 784, 256},   {"mlp", 64, 256, 256},    {"gpt 4x128", 8192, 128, 384}, {"gpt 4x128", 8192, 128, 512},
    {"gpt 4x128", 8192, 512, 128}, {"gpt 12x768", 512, 768, 2304}, {"gpt 12x768", 512, 768, 3072},
    {"gpt 12x768", 512, 3072, 768}, {"gpt 12x768", 512, 768, 768},
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double seconds(int iterations, F&& f) {
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) f();
  return std::chrono::duration<double>(Clock::now() - start).count() / iterations;
}

// oneDNN run directly (whatever the threshold), for the comparison.
struct DirectOneDnn {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul primitive;
  dnnl::memory a, b, c;

  DirectOneDnn(const Tensor& ta, const Tensor& tb, const Tensor& tc) {
    using desc = dnnl::memory::desc;
    const auto f32 = dnnl::memory::data_type::f32;
    const int64_t m = tc.size(0), n = tc.size(1), k = ta.size(1);
    const desc da({m, k}, f32, {ta.stride(0), ta.stride(1)}), db({k, n}, f32, {tb.stride(0), tb.stride(1)}),
        dc({m, n}, f32, {n, 1});
    primitive = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(da, db, dc), engine));
    a = dnnl::memory(da, engine, const_cast<float*>(ta.data_ptr<float>()));
    b = dnnl::memory(db, engine, const_cast<float*>(tb.data_ptr<float>()));
    c = dnnl::memory(dc, engine, tc.data_ptr<float>());
  }
  void run() {
    primitive.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
};

// oneDNN's dnnl_sgemm on the same operands (each row-major or transposed in place).
struct DirectSgemm {
  char ta, tb;
  int64_t m, n, k, lda, ldb;
  const float *a, *b;
  float* c;
  DirectSgemm(const Tensor& x, const Tensor& y, const Tensor& out)
      : ta(x.stride(1) == 1 ? 'N' : 'T'), tb(y.stride(1) == 1 ? 'N' : 'T'), m(out.size(0)), n(out.size(1)),
        k(x.size(1)), lda(x.stride(1) == 1 ? x.stride(0) : x.stride(1)),
        ldb(y.stride(1) == 1 ? y.stride(0) : y.stride(1)), a(x.data_ptr<float>()), b(y.data_ptr<float>()),
        c(out.data_ptr<float>()) {}
  void run() const { dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n); }
};

void product_row(const char* model, const char* product, const Tensor& a, const Tensor& b, int reps) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const double flop = 2.0 * static_cast<double>(m * n * k);
  const int iterations = std::max(1, static_cast<int>(2e8 / flop));
  Tensor tiled_out = empty({m, n}), onednn_out = empty({m, n}), sgemm_out = empty({m, n});
  const Tensor ca = raw::contiguous(a), cb = raw::contiguous(b);
  const RowMatrix ea = Eigen::Map<const RowMatrix>(ca.data_ptr<float>(), m, k);
  const RowMatrix eb = Eigen::Map<const RowMatrix>(cb.data_ptr<float>(), k, n);
  RowMatrix ec(m, n);
  DirectOneDnn onednn(a, b, onednn_out);
  const DirectSgemm sgemm(a, b, sgemm_out);
  const bool tiled_takes = cpu::gemm_tiled_f32(tiled_out, a, b, Scalar(1.0), Scalar(0.0));
  auto run_tiled = [&] { cpu::gemm_tiled_f32(tiled_out, a, b, Scalar(1.0), Scalar(0.0)); };
  auto run_eigen = [&] { ec.noalias() = ea * eb; };
  std::vector<double> t_onednn, t_sgemm, t_tiled, t_eigen;
  onednn.run();
  sgemm.run();
  run_eigen();
  for (int r = 0; r < reps; ++r) {
    t_onednn.push_back(seconds(iterations, [&] { onednn.run(); }));
    t_sgemm.push_back(seconds(iterations, [&] { sgemm.run(); }));
    if (tiled_takes) t_tiled.push_back(seconds(iterations, run_tiled));
    t_eigen.push_back(seconds(iterations, run_eigen));
  }
  const Tensor picked_out = empty({m, n});
  const char* picked = cpu::onednn_gemm(picked_out, a, b, Scalar(1.0), Scalar(0.0)) ? "oneDNN"
                       : tiled_takes                                                     ? "tiled"
                                                                                         : "Eigen";
  const auto gflops = [&](const std::vector<double>& t) { return flop / median(t) / 1e9; };
  char shape[48];
  std::snprintf(shape, sizeof shape, "%ldx%ldx%ld", static_cast<long>(m), static_cast<long>(k), static_cast<long>(n));
  std::string tiled = tiled_takes ? std::to_string(static_cast<int>(gflops(t_tiled) + 0.5)) : "-";
  std::printf("%-11s %-8s %-16s %9.0f %9.0f %9s %9.0f   %s\n", model, product, shape, gflops(t_onednn),
              gflops(t_sgemm), tiled.c_str(), gflops(t_eigen), picked);
}

}  // namespace

int bench_gemm_main(int argc, char** argv) {
  int threads = 1, reps = 7;
  if (const auto status = bench::parse_count_options(argc, argv, "gemm", threads, reps)) return *status;
  set_num_threads(threads);
  std::printf("float32 GEMM GFLOP/s, %d thread(s), median of %d; product m x k x n\n", threads, reps);
  std::printf("%-11s %-8s %-16s %9s %9s %9s %9s   %s\n", "model", "product", "shape", "matmul", "sgemm", "tiled",
              "Eigen", "picked");
  for (const LinearShape& s : kShapes) {
    Generator gen(1);
    const Tensor x = randn({s.rows, s.in}, {}, &gen), w = randn({s.out, s.in}, {}, &gen),
                 dy = randn({s.rows, s.out}, {}, &gen);
    product_row(s.model, "forward", x, w.t(), reps);
    product_row(s.model, "dX", dy, w, reps);
    product_row(s.model, "dW", dy.t(), x, reps);
  }
  return 0;
}
