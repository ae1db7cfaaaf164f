// syncgrad-bench bf16: whether bfloat16 products can pay on this CPU, and what they do. Prints
//   - the CPU's bfloat16 features (tensor/cpu/cpu_features.h: AVX512-BF16; AMX-BF16/AMX-TILE from CPUID, whether
//     the OS enables the tile state in XCR0 and grants it) and the path bfloat16 matmuls take here;
//   - the core's rate of vdpbf16ps against vfmadd231ps on independent register chains (GFLOP/s, one core),
//     the two loops alternating, median of --reps: the ceiling of a dot-product kernel against float32's;
//   - GEMM GFLOP/s through the tensor API, bfloat16 against float32 on the same shapes (the MLP's, the GPT's
//     and a square one), alternating, median of --reps.
// Run it with SYNCGRAD_CPU_BF16_DOT=1 / =0 and SYNCGRAD_CPU_BF16_ONEDNN=1 / =0 to compare the bfloat16 paths
// (docs/BENCHMARKS.md).
//   syncgrad-bench bf16 [--reps N]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/subcommands.h"
#include "syncgrad.h"
#include "tensor/cpu/bf16_kernels.h"
#include "tensor/cpu/cpu_features.h"
#include "tensor/cpu/onednn_gemm.h"

namespace {

using namespace syncgrad;
using Clock = std::chrono::steady_clock;

constexpr int kChains = 12;  // independent accumulators: enough to cover either instruction's latency

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double seconds(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The sum of a vector's lanes (not _mm512_reduce_add_ps: GCC 12 warns falsely inside it).
__attribute__((target("avx512f"))) float lane_sum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float sum = 0.0f;
  for (float x : lanes) sum += x;
  return sum;
}

// kChains x iterations vdpbf16ps (64 flops each); returns a sum so the loop is not optimised away.
__attribute__((target("avx512f,avx512bf16"), noinline)) float dot_chains(int64_t iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3f803f80));
  for (int64_t k = 0; k < iterations; ++k) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, x);
    __asm__ volatile("" : "+v"(x));
  }
  __m512 total = acc[0];
  for (int i = 1; i < kChains; ++i) total = _mm512_add_ps(total, acc[i]);
  return lane_sum(total);
}

// kChains x iterations vfmadd231ps (32 flops each).
__attribute__((target("avx512f,fma"), noinline)) float fma_chains(int64_t iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512 x = _mm512_set1_ps(1e-9f);
  for (int64_t k = 0; k < iterations; ++k) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(x, x, acc[i]);
    __asm__ volatile("" : "+v"(x));
  }
  __m512 total = acc[0];
  for (int i = 1; i < kChains; ++i) total = _mm512_add_ps(total, acc[i]);
  return lane_sum(total);
}

const char* yes_no(bool v) { return v ? "yes" : "no"; }

}  // namespace

int bench_bf16_main(int argc, char** argv) {
  int reps = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete argument '%s'\nusage: %s [--reps N]   (N a positive integer)\n",
                   argv[0], arg.c_str(), argv[0]);
      return 2;
    }
  }
  set_num_threads(1);
  const cpu::Bf16Features f = cpu::bf16_features();
  std::printf("CPU: avx512 (f/dq/bw/vl) %s, avx512_bf16 %s, amx_bf16 %s, amx_tile %s, "
              "tile state enabled by the OS %s\n",
              yes_no(f.avx512_core), yes_no(f.avx512_bf16), yes_no(f.amx_bf16), yes_no(f.amx_tile),
              yes_no(f.os_tile_state));
  std::printf("AMX-BF16 usable by this process: %s\n", yes_no(cpu::amx_bf16_usable()));
  std::printf("bfloat16 matmuls run on: %s%s\n\n",
              cpu::onednn_bf16_chosen() ? "oneDNN from 4M multiply-adds, else " : "",
              cpu::bf16::dot_available() ? "the AVX512_BF16 dot-product kernels"
                                         : "the float32 kernels (operands widened, result rounded once)");

  if (f.avx512_bf16) {
    const int64_t iterations = 20'000'000;
    std::vector<double> dot, fma;
    float sink = 0.0f;
    for (int r = 0; r < reps; ++r) {
      dot.push_back(seconds([&] { sink += dot_chains(iterations); }));
      fma.push_back(seconds([&] { sink += fma_chains(iterations); }));
    }
    const double flops = static_cast<double>(iterations) * kChains;
    const double dot_rate = flops * 64 / median(dot) / 1e9, fma_rate = flops * 32 / median(fma) / 1e9;
    std::printf("register-only loops, one core (%d chains):\n", kChains);
    std::printf("  vdpbf16ps   %7.1f GFLOP/s  (%.2f G instructions/s)\n", dot_rate, dot_rate / 64);
    std::printf("  vfmadd231ps %7.1f GFLOP/s  (%.2f G instructions/s)\n", fma_rate, fma_rate / 32);
    std::printf("  bf16 / f32  %7.2f   (checksum %g)\n\n", dot_rate / fma_rate, static_cast<double>(sink));
  }

  struct Shape {
    const char* what;
    int64_t m, k, n;
    bool transposed_b;  // b as a linear layer's weight (n, k) transposed
  };
  const Shape shapes[] = {{"MLP fc1 forward (x @ W^T)", 64, 784, 256, true},
                          {"MLP fc1 weight gradient", 256, 64, 784, false},
                          {"GPT qkv forward", 512, 128, 384, true},
                          {"GPT mlp down-projection", 512, 512, 128, true},
                          {"square", 512, 512, 512, false}};
  Generator gen(3);
  std::printf("%-28s %18s %10s %10s %8s\n", "GEMM (1 thread)", "M x K x N", "f32 GF/s", "bf16 GF/s", "ratio");
  for (const Shape& s : shapes) {
    Tensor a = randn({s.m, s.k}, {}, &gen);
    Tensor b = s.transposed_b ? randn({s.n, s.k}, {}, &gen).t() : randn({s.k, s.n}, {}, &gen);
    Tensor a16 = a.to(DType::bf16), b16 = b.to(DType::bf16);
    const int iterations = static_cast<int>(std::max<int64_t>(1, 2'000'000'000 / (2 * s.m * s.k * s.n)));
    std::vector<double> f32_time, bf16_time;
    for (int r = 0; r < reps + 1; ++r) {  // the first round warms up
      const double t32 = seconds([&] {
        for (int i = 0; i < iterations; ++i) raw::mm(a, b);
      });
      const double t16 = seconds([&] {
        for (int i = 0; i < iterations; ++i) raw::mm(a16, b16);
      });
      if (r == 0) continue;
      f32_time.push_back(t32 / iterations);
      bf16_time.push_back(t16 / iterations);
    }
    const double flop = 2.0 * static_cast<double>(s.m * s.k * s.n);
    const double r32 = flop / median(f32_time) / 1e9, r16 = flop / median(bf16_time) / 1e9;
    const std::string dims = std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
    std::printf("%-28s %18s %10.1f %10.1f %8.2f\n", s.what, dims.c_str(), r32, r16, r16 / r32);
  }
  return 0;
}
