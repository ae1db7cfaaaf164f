// syncgrad-bench winograd: the two tilings of the 3x3 Winograd conv kernels (tensor/cpu/winograd.h) side by side on
// the stride-1 3x3 layers of the bundled ResNets (CIFAR-sized input: ResNet-20 at batch 128, ResNet-18 at batch 64):
// F(2x2, 3x3) (16 products per 4 outputs) against F(4x4, 3x3) (36 per 16), for the forward pass, the input
// gradient and the weight gradient, alternating, and which tiling tile_side() picks. GFLOP/s counts a direct
// convolution's FLOPs (2 * C_out * C_in * 9 per output pixel), so both exceed the core's FMA peak where the
// saved multiplications pay.
//   syncgrad-bench winograd [--threads N] [--reps N]
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "bench/count_options.h"
#include "bench/fastest_alternating.h"
#include "bench/subcommands.h"
#include "syncgrad.h"
#include "tensor/cpu/winograd.h"

namespace {

using namespace syncgrad;

struct Layer {
  const char* model;
  int64_t batch, channels, side;
};

// Every stride-1 3x3 convolution shape of the two ResNets (the first of a stage with stride 2 is not Winograd's).
const Layer kLayers[] = {{"resnet20", 128, 16, 32}, {"resnet20", 128, 32, 16}, {"resnet20", 128, 64, 8},
                         {"resnet18", 64, 64, 32},  {"resnet18", 64, 128, 16}, {"resnet18", 64, 256, 8},
                         {"resnet18", 64, 512, 4}};

std::vector<float> random_floats(int64_t n, Generator* gen) {
  Tensor t = randn({n}, {}, gen);
  return to_vector<float>(t);
}

}  // namespace

int bench_winograd_main(int argc, char** argv) {
  int threads = 1, reps = 7;
  if (const auto status = bench::parse_count_options(argc, argv, "winograd", threads, reps)) return *status;
  set_num_threads(threads);
  std::printf("syncgrad-bench winograd: 3x3 Winograd tilings on the ResNets' stride-1 layers, %d thread(s), fastest "
              "of %d, alternating (GFLOP/s of a direct convolution's FLOPs)\n\n",
              threads, reps);
  std::printf("%-9s %5s %4s %5s | %-11s %8s %8s %6s | %s\n", "model", "batch", "ch", "side", "pass", "F(2x2)",
              "F(4x4)", "4 / 2", "picked");
  Generator gen(7);
  for (const Layer& l : kLayers) {
    const Conv2dParams p{1, 1};
    const cpu::ConvShape s{l.batch, l.channels, l.side, l.side, l.channels, 3, 3, l.side, l.side, 1, p};
    const int64_t elements = l.batch * l.channels * l.side * l.side;  // of x, gy and y
    const std::vector<float> x = random_floats(elements, &gen), gy = random_floats(elements, &gen);
    const std::vector<float> w = random_floats(l.channels * l.channels * 9, &gen);
    std::vector<float> out(static_cast<size_t>(std::max(elements, l.channels * l.channels * 9)));
    const double gflop = 2.0 * static_cast<double>(elements * l.channels * 9) / 1e9;
    struct Pass {
      const char* name;
      std::function<void(int64_t)> run;
    };
    const Pass passes[] = {
        {"forward", [&](int64_t tile) { cpu::winograd::forward(x.data(), w.data(), nullptr, out.data(), s, tile); }},
        {"grad input",
         [&](int64_t tile) { cpu::winograd::backward_input(gy.data(), w.data(), out.data(), s, tile); }},
        {"grad weight",
         [&](int64_t tile) { cpu::winograd::backward_weight(gy.data(), x.data(), out.data(), s, tile); }},
    };
    for (const Pass& pass : passes) {
      const auto [two, four] = bench::fastest_alternating(reps, [&] { pass.run(2); }, [&] { pass.run(4); });
      std::printf("%-9s %5lld %4lld %5lld | %-11s %8.1f %8.1f %6.2f | F(%lldx%lld)\n", l.model,
                  static_cast<long long>(l.batch), static_cast<long long>(l.channels),
                  static_cast<long long>(l.side), pass.name, gflop / two, gflop / four, two / four,
                  static_cast<long long>(cpu::winograd::tile_side(s)),
                  static_cast<long long>(cpu::winograd::tile_side(s)));
    }
  }
  return 0;
}
