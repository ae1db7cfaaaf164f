// How much worse than float32 a mixed-precision training test may let one epoch's test accuracy be, derived
// from the measured seed-to-seed spread rather than from one machine's run (test_amp.cpp, and test_amp_ddp.sh,
// which reads the two figures below from this file).
//
// One epoch's accuracy is a chaotic function of every rounding on the way: another seed, --amp bf16 / fp16 or
// another CPU's kernels (docs/DESIGN.md, "Machine-independent tests") each move it by about the spread between
// seeds. bench/seed_spread.sh measures it; the figures are the sample standard deviation of float32's test
// accuracy after one epoch (trainer defaults), in points, the larger of the CPUs measured:
//   MLP, seeds 0-9: 0.15 on an Intel Xeon (AVX512-FP16, AMX), 2026-12-01; mean 86.46, range 86.26-86.76; the
//     AMD EPYC Zen 5 runs of seeds 0-4 (docs/BENCHMARKS.md) gave the same five figures.
//   CNN, seeds 0-4: 0.42 on the same Xeon; mean 89.30, range 88.83-89.80 (seed 0's 88.83 is also the Zen 5
//     figure: float32 runs agree across the two CPUs, float16 runs do not).
#pragma once

namespace syncgrad::train_test {

constexpr double kMlpSeedSdPoints = 0.15;
constexpr double kCnnSeedSdPoints = 0.42;

// A mixed-precision run is another draw from the same spread, so its difference to float32 at the same seed
// has a standard deviation of about sqrt(2) x sd. It may be worse by up to three of those: were mixed
// precision free, a check would fail about once in 700; a real loss (scaler, casts or kernels broken) costs
// points, not tenths. Better than float32 is never a failure.
constexpr double amp_margin_points(double seed_sd_points) { return 3.0 * 1.4142135623730951 * seed_sd_points; }

}  // namespace syncgrad::train_test
