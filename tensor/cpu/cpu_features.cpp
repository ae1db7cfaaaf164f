// CPUID/XCR0 reading, Linux's AMX permission request and the kernel overrides behind cpu_features.h.
#include "tensor/cpu/cpu_features.h"

#include <asm/prctl.h>
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::cpu {
namespace {

constexpr int kXFeatureTileData = 18;  // XFEATURE_XTILEDATA in Linux's xstate numbering

bool request_tile_data() {
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, kXFeatureTileData) == 0;
}

}  // namespace

Bf16Features bf16_features() {
  Bf16Features f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  bool cpu_avx512_core = false;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    cpu_avx512_core = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
    f.amx_bf16 = (d >> 22) & 1;
    f.amx_tile = (d >> 24) & 1;
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = (a >> 5) & 1;
  if (__get_cpuid(1, &a, &b, &c, &d) && ((c >> 27) & 1)) {  // OSXSAVE: XCR0 is readable
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    f.os_tile_state = ((lo >> 17) & 3) == 3;
    f.avx512_core = cpu_avx512_core && ((lo >> 5) & 7) == 7;
  }
  return f;
}

bool amx_bf16_usable() {
  static const bool usable = [] {
    const Bf16Features f = bf16_features();
    return f.amx_bf16 && f.amx_tile && f.os_tile_state && request_tile_data();
  }();
  return usable;
}

std::optional<bool> kernel_override(const char* name, const char* choices) {
  const char* setting = std::getenv(name);
  const std::string value = setting != nullptr ? setting : "";
  SYNCGRAD_CHECK(value.empty() || value == "0" || value == "1", ValueError, name, "='", value,
                 "' is not 0 or 1; unset it to let the CPU decide (", choices, ")");
  if (value.empty()) return std::nullopt;
  return value == "1";
}

}  // namespace syncgrad::cpu
