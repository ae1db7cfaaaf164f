// syncgrad-bench core: the core's performance figures side by side in one run, each beside its reference
// and target: GEMM through the tensor API vs raw Eigen (same threads), elementwise add vs memcpy of the same
// buffer, the per-op overhead of a tiny add, and one forward+backward of a small MLP. Every figure is the
// median of --reps samples taken after a warm-up, the tensor op and its reference alternating.
//   syncgrad-bench core [--threads N] [--reps N] [--quick]
#include <malloc.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/subcommands.h"
#include "syncgrad.h"

namespace {

using namespace syncgrad;
using Clock = std::chrono::steady_clock;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Options {
  int threads = 1;
  int reps = 7;
  bool quick = false;
};

struct Row {
  std::string item, ours, reference, ratio, target, result;
};

// Seconds per call of f, one sample per rep, each sample `iters` calls; ours and reference alternate.
struct Timing {
  std::vector<double> ours, reference;
};

template <class F>
double seconds_per_call(int iters, F&& f) {
  auto start = Clock::now();
  for (int i = 0; i < iters; ++i) f();
  return std::chrono::duration<double>(Clock::now() - start).count() / iters;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class Ours, class Reference>
Timing time_pair(const Options& opt, int iters, Ours&& ours, Reference&& reference) {
  for (int w = 0; w < 2; ++w) {
    ours();
    reference();
  }
  Timing t;
  for (int r = 0; r < opt.reps; ++r) {
    t.ours.push_back(seconds_per_call(iters, ours));
    t.reference.push_back(seconds_per_call(iters, reference));
  }
  return t;
}

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

const char* verdict(bool pass) { return pass ? "PASS" : "MISS"; }

Row gemm_row(const Options& opt, int64_t m, int64_t k, int64_t n) {
  Generator gen(42);
  Tensor a = randn({m, k}, {}, &gen), b = randn({k, n}, {}, &gen);
  RowMatrix ea = Eigen::Map<const RowMatrix>(a.data_ptr<float>(), m, k);
  RowMatrix eb = Eigen::Map<const RowMatrix>(b.data_ptr<float>(), k, n);
  RowMatrix ec(m, n);
  const double flop = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double flop_per_sample = opt.quick ? 5e8 : 2e9;
  const int iters = std::max(1, static_cast<int>(flop_per_sample / flop));
  Tensor c;
  Timing t = time_pair(
      opt, iters, [&] { c = matmul(a, b); }, [&] { ec.noalias() = ea * eb; });
  // Both sides must compute the same product.
  const float* cp = c.data_ptr<float>();
  double worst = 0.0;
  for (int64_t i = 0; i < m * n; ++i) worst = std::max(worst, static_cast<double>(std::abs(cp[i] - ec.data()[i])));
  const double ours = flop / median(t.ours) / 1e9, eigen = flop / median(t.reference) / 1e9;
  const bool same = worst <= 1e-3 * std::sqrt(static_cast<double>(k));
  return {"GEMM f32 " + std::to_string(m) + "x" + std::to_string(k) + " @ " + std::to_string(k) + "x" + std::to_string(n),
          format("%.1f GFLOP/s", ours), format("Eigen %.1f GFLOP/s", eigen), format("%.1f%%", 100.0 * ours / eigen),
          ">= 95% of Eigen", same ? verdict(ours >= 0.95 * eigen) : "MISS (results differ)"};
}

Row add_row(const Options& opt) {
  const int64_t n = int64_t{1} << 24;
  Generator gen(7);
  Tensor a = rand({n}, {}, &gen), b = rand({n}, {}, &gen);
  std::vector<float> dst(static_cast<size_t>(n), 0.0f);
  const float* src = a.data_ptr<float>();
  Tensor c;
  Timing t = time_pair(
      opt, 1, [&] { c = add(a, b); }, [&] { std::memcpy(dst.data(), src, static_cast<size_t>(n) * sizeof(float)); });
  const double add_gbs = 3.0 * 4.0 * static_cast<double>(n) / median(t.ours) / 1e9;
  const double copy_gbs = 2.0 * 4.0 * static_cast<double>(n) / median(t.reference) / 1e9;
  return {"add f32 16M elements (3 x 4 B moved each)", format("%.1f GB/s", add_gbs),
          format("memcpy %.1f GB/s", copy_gbs), format("%.1f%%", 100.0 * add_gbs / copy_gbs), ">= 70% of memcpy",
          verdict(add_gbs >= 0.7 * copy_gbs)};
}

Row overhead_row(const Options& opt) {
  Tensor x = ones({8}), y = ones({8});
  Tensor z;
  const int iters = opt.quick ? 20000 : 100000;
  std::vector<double> samples;
  z = add(x, y);
  for (int r = 0; r < opt.reps; ++r) samples.push_back(seconds_per_call(iters, [&] { z = add(x, y); }));
  const double ns = median(samples) * 1e9;
  return {"per-op overhead: add of two 8-element tensors", format("%.0f ns/op", ns), "-", "-", "< 1000 ns",
          verdict(ns < 1000.0)};
}

// x (4, 8) -> linear(8, 16) -> relu -> linear(16, 1) -> sum, then backward; parameters accumulate .grad.
Row mlp_row(const Options& opt) {
  Generator gen(3);
  Tensor x = randn({4, 8}, {}, &gen);
  Tensor w1 = randn({16, 8}, {.requires_grad = true}, &gen), b1 = zeros({16}, {.requires_grad = true});
  Tensor w2 = randn({1, 16}, {.requires_grad = true}, &gen), b2 = zeros({1}, {.requires_grad = true});
  auto step = [&] { sum(linear(relu(linear(x, w1, b1)), w2, b2)).backward(); };
  step();
  const int iters = opt.quick ? 2000 : 10000;
  std::vector<double> samples;
  for (int r = 0; r < opt.reps; ++r) samples.push_back(seconds_per_call(iters, step));
  return {"MLP fwd+bwd: (4, 8) -> linear 16, relu -> linear 1, sum", format("%.2f us/step", median(samples) * 1e6),
          "-", "-", "-", "-"};
}

void print_table(const Options& opt, const std::vector<Row>& rows) {
  std::printf("syncgrad-bench core: threads %d, %d reps (median)%s\n\n", opt.threads, opt.reps,
              opt.quick ? ", quick" : "");
  std::printf("%-56s %-16s %-24s %-8s %-18s %s\n", "item", "syncgrad", "reference", "ratio", "target", "result");
  for (const Row& r : rows) {
    std::printf("%-56s %-16s %-24s %-8s %-18s %s\n", r.item.c_str(), r.ours.c_str(), r.reference.c_str(),
                r.ratio.c_str(), r.target.c_str(), r.result.c_str());
  }
}

int usage(const char* argv0, const std::string& problem) {
  std::fprintf(stderr, "%s: %s\nusage: %s [--threads N] [--reps N] [--quick]\n", argv0, problem.c_str(), argv0);
  return 2;
}

}  // namespace

int bench_core_main(int argc, char** argv) {
  Options opt;
  bool reps_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--threads" || arg == "--reps") && i + 1 < argc) {
      int value = std::atoi(argv[++i]);
      if (value < 1) return usage(argv[0], arg + " needs a positive integer, got '" + argv[i] + "'");
      if (arg == "--threads") opt.threads = value;
      else {
        opt.reps = value;
        reps_given = true;
      }
    } else if (arg == "--quick") {
      opt.quick = true;
    } else {
      return usage(argv[0], "unknown or incomplete argument '" + arg + "'");
    }
  }
  if (opt.quick && !reps_given) opt.reps = 3;
  // Keep freed big blocks in the process (a fresh page costs ~12 us to touch here).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  set_num_threads(opt.threads);
  Eigen::setNbThreads(opt.threads);

  std::vector<Row> rows;
  rows.push_back(gemm_row(opt, 512, 512, 512));
  rows.push_back(gemm_row(opt, 1024, 1024, 1024));
  rows.push_back(gemm_row(opt, 64, 784, 256));
  rows.push_back(add_row(opt));
  rows.push_back(overhead_row(opt));
  rows.push_back(mlp_row(opt));
  print_table(opt, rows);
  return 0;
}
