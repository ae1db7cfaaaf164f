// FMA peak measurement: kChains independent accumulator chains hide the FMA latency on every FMA port; each
// iteration is kChains vector FMAs of 2 FLOPs per lane. The chains start from different values: identical
// chains are merged into one by the compiler (which would report 12 times the real rate). The best of kRuns
// runs counts.
#include "tools/train/cpu_peak.h"

#include <immintrin.h>

#include <time.h>

#include <algorithm>

namespace syncgrad::train {
namespace {

constexpr int kChains = 12;
constexpr long kIterations = 1000000;
constexpr int kRuns = 6;

// This thread's CPU time: time the thread spends descheduled on a busy machine does not count.
double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

__attribute__((target("avx512f"))) double measure_avx512() {
  double best = 0;
  float sink = 0;
  for (int run = 0; run < kRuns; ++run) {
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(i));
    const __m512 factor = _mm512_set1_ps(0.9999999f), addend = _mm512_set1_ps(1e-7f);
    const double start = thread_seconds();
    for (long i = 0; i < kIterations; ++i) {
      for (__m512& a : acc) a = _mm512_fmadd_ps(a, factor, addend);
    }
    const double seconds = thread_seconds() - start;
    alignas(64) float lanes[16];
    for (const __m512& a : acc) {
      _mm512_store_ps(lanes, a);
      sink += lanes[0];
    }
    best = std::max(best, 2.0 * 16 * kChains * kIterations / seconds);
  }
  return sink == 0.5f ? 0 : best;  // the accumulators are used, so the loop is not optimised away
}

__attribute__((target("avx2,fma"))) double measure_avx2() {
  double best = 0;
  float sink = 0;
  for (int run = 0; run < kRuns; ++run) {
    __m256 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(1.0f + 0.001f * static_cast<float>(i));
    const __m256 factor = _mm256_set1_ps(0.9999999f), addend = _mm256_set1_ps(1e-7f);
    const double start = thread_seconds();
    for (long i = 0; i < kIterations; ++i) {
      for (__m256& a : acc) a = _mm256_fmadd_ps(a, factor, addend);
    }
    const double seconds = thread_seconds() - start;
    alignas(32) float lanes[8];
    for (const __m256& a : acc) {
      _mm256_store_ps(lanes, a);
      sink += lanes[0];
    }
    best = std::max(best, 2.0 * 8 * kChains * kIterations / seconds);
  }
  return sink == 0.5f ? 0 : best;
}

}  // namespace

double fma_peak_flops_per_core() {
  static const double peak = [] {
    if (__builtin_cpu_supports("avx512f")) return measure_avx512();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return measure_avx2();
    return 0.0;
  }();
  return peak;
}

}  // namespace syncgrad::train
