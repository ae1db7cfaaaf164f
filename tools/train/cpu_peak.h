// The peak float32 FLOP rate of one CPU core, measured: the denominator of the model FLOPs utilisation (MFU)
// that syncgrad-train prints and logs (tools/train/mfu.h).
#pragma once

namespace syncgrad::train {

// FLOP/s (per second of thread CPU time) of one thread running independent fused multiply-adds on the widest
// vectors the CPU has (AVX-512, else AVX2 + FMA; 0 on other CPUs): the best of six ~3 ms runs, measured once
// per process. On a machine whose other hardware thread of the core is busy it comes out lower.
double fma_peak_flops_per_core();

}  // namespace syncgrad::train
