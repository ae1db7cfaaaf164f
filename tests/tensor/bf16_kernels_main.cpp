// Entry point of the bfloat16 kernel suite (test_bf16_kernels.cpp). Run as meson test "bf16_kernels" it is
// meant for the AVX512_BF16 dot-product kernels: on a CPU without them ($SYNCGRAD_TEST_REQUIRE_BF16_DOT set,
// the kernels not chosen) it says so and exits with 77, which meson reports as SKIP, instead of passing on the
// float32 fallback that "bf16_kernels_fallback" already covers. Run as "bf16_kernels_amx" ($SYNCGRAD_TEST_REQUIRE_AMX
// set) it is meant for oneDNN's AMX kernels and exits with 77 where this process cannot use AMX-BF16.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include "tensor/cpu/bf16_kernels.h"
#include "tensor/cpu/cpu_features.h"

int main(int argc, char** argv) {
  if (std::getenv("SYNCGRAD_TEST_REQUIRE_BF16_DOT") != nullptr && !syncgrad::cpu::bf16::dot_available()) {
    std::printf("SKIP bf16_kernels: this CPU has no AVX512_BF16 (avx512_bf16 missing from /proc/cpuinfo), or "
                "SYNCGRAD_CPU_BF16_DOT is not 1; bf16_kernels_fallback tests the float32 path\n");
    std::fflush(stdout);
    return 77;  // meson: skipped
  }
  if (std::getenv("SYNCGRAD_TEST_REQUIRE_AMX") != nullptr && !syncgrad::cpu::amx_bf16_usable()) {
    std::printf("SKIP bf16_kernels_amx: AMX-BF16 is not usable here (amx_bf16/amx_tile missing from "
                "/proc/cpuinfo, or the OS does not enable or grant the tile state); bf16_kernels_onednn runs "
                "the same oneDNN calls on its AVX-512 kernels\n");
    std::fflush(stdout);
    return 77;  // meson: skipped
  }
  doctest::Context context(argc, argv);
  return context.run();
}
