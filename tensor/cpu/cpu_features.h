// The CPU's bfloat16 features as this process can use them: AVX512-BF16 (vdpbf16ps), and AMX-BF16 tiles,
// which need both the CPU (CPUID) and Linux (the tile state enabled in XCR0 and, since Linux 5.16, granted to
// the process by arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)). A virtual machine can hide AMX from a
// CPU that has it (the 2-core Intel Xeon VM of docs/BENCHMARKS.md). Also the environment's overrides of the
// kernel choices these features drive.
#pragma once

#include <optional>

namespace syncgrad::cpu {

struct Bf16Features {
  bool avx512_core = false;    // AVX512F, DQ, BW and VL (CPUID.(7,0):EBX bits 16, 17, 30, 31) with the OS saving
                               // the opmask and zmm state (XCR0 bits 5-7): what oneDNN's bfloat16 kernels need
                               // at least; without it oneDNN has only its reference kernels for bfloat16
  bool avx512_bf16 = false;    // CPUID.(7,1):EAX bit 5
  bool amx_bf16 = false;       // CPUID.(7,0):EDX bit 22
  bool amx_tile = false;       // CPUID.(7,0):EDX bit 24
  bool os_tile_state = false;  // XCR0 bits 17-18 (XTILECFG, XTILEDATA) set by the OS
};

// What CPUID and XCR0 say; asks nothing of the OS.
Bf16Features bf16_features();

// True when AMX-BF16 instructions can run in this process: the CPU has them, the OS enables the tile state and
// grants this process the tile data (requested once, on the first call).
bool amx_bf16_usable();

// A 0/1 override of a kernel choice from the environment variable `name`: nullopt when it is unset or empty,
// true for "1", false for "0"; any other value is a ValueError naming it, with `choices` (what 1 and 0 select)
// as the hint.
std::optional<bool> kernel_override(const char* name, const char* choices);

}  // namespace syncgrad::cpu
