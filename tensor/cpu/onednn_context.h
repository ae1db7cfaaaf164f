// What every oneDNN call of the CPU kernels shares: the CPU engine, each thread's stream, and each thread's
// reusable memory for a primitive's scratchpad (scratchpad_mode::user: Debian's build shares the library's own
// between threads, and two threads running primitives at once, the replicas of DataParallel, overwrote each
// other's partial results) and for operands reordered into a primitive's layout.
#pragma once

#include <dnnl.hpp>

#include <cstddef>

namespace syncgrad::cpu::onednn {

dnnl::engine& engine();

// This thread's stream on engine(): primitives run in order, on the intra-op OpenMP threads.
dnnl::stream& stream();

// A memory object of `desc` over this thread's buffer `slot` (grown as needed, 64-byte aligned, reused across
// calls): valid until this thread next asks for the same slot.
dnnl::memory thread_memory(const dnnl::memory::desc& desc, int slot);

// Throws oneDNN's failure to run a primitive (`what`: "bfloat16 convolution", ...) as a DeviceError naming its
// status; for bfloat16 the hint is the switch back to syncgrad's own kernels.
[[noreturn]] void throw_run_failure(const dnnl::error& e, const char* what, bool bfloat16);

}  // namespace syncgrad::cpu::onednn
