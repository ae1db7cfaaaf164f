// syncgrad-bench conv: where a training step of the bundled LeNet-style CNN (batch 64, float32, or with --amp
// bf16|fp16 the kernels on that dtype and the step under autocast) spends its time.
// Times each conv/pool kernel the step runs, on the step's own shapes, then the whole step (forward, cross
// entropy, backward, SGD with momentum); "rest" is the step minus the listed kernels (linear layers, ReLU, loss,
// optimizer, autograd). Every figure is the median of --reps samples taken after a warm-up. GFLOP/s counts a direct
// convolution's FLOPs, so the Winograd kernels of conv2 (F(4x4, 5x5): 6.25x fewer multiplications) exceed the
// core's FMA peak.
//   syncgrad-bench conv [--threads N] [--reps N] [--amp off|bf16|fp16]
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/subcommands.h"
#include "syncgrad.h"
#include "optim/sgd.h"

namespace {

using namespace syncgrad;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median seconds of one call of f over `reps` samples of `iters` calls each, after two warm-up calls.
double time_call(int reps, int iters, const std::function<void()>& f) {
  f();
  f();
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) f();
    samples.push_back(std::chrono::duration<double>(Clock::now() - start).count() / iters);
  }
  return median(samples);
}

struct Item {
  std::string name;
  double seconds;
  double gflop;  // 0: not a GEMM-shaped kernel
};

// GEMM work of one conv kernel: 2 * C_out * (C_in * kH * kW) * (OH * OW) * N.
double conv_gflop(int64_t n, int64_t c_in, int64_t c_out, int64_t k, int64_t out_plane) {
  return 2.0 * static_cast<double>(c_out * c_in * k * k * out_plane * n) / 1e9;
}

}  // namespace

int bench_conv_main(int argc, char** argv) {
  int threads = 1, reps = 7;
  std::string amp = "off";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--amp" && i + 1 < argc && (std::string(argv[i + 1]) == "off" || std::string(argv[i + 1]) == "bf16" ||
                                           std::string(argv[i + 1]) == "fp16")) {
      amp = argv[++i];
    } else if ((arg == "--threads" || arg == "--reps") && i + 1 < argc) {
      const int value = std::atoi(argv[++i]);
      if (value < 1) {
        std::fprintf(stderr, "%s: %s needs a positive integer\n", argv[0], arg.c_str());
        return 2;
      }
      (arg == "--threads" ? threads : reps) = value;
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--reps N] [--amp off|bf16|fp16]\n", argv[0]);
      return 2;
    }
  }
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  set_num_threads(threads);

  const int64_t n = 64;
  Generator gen(5);
  models::CNN model(&gen);
  Tensor x = randn({n, 1, 28, 28}, {}, &gen);
  Tensor target = randint(0, 10, {n}, {.dtype = DType::i64}, &gen);
  const Conv2dParams pad2{.stride = 1, .padding = 2};
  Tensor w1 = model.conv1->weight.detach(), b1 = model.conv1->bias.detach();
  Tensor w2 = model.conv2->weight.detach(), b2 = model.conv2->bias.detach();
  Tensor y1 = raw::conv2d(x, w1, b1, 1, 2);                         // (64, 32, 28, 28)
  auto [p1, i1] = raw::max_pool2d_with_indices(raw::relu(y1), 2);   // (64, 32, 14, 14)
  Tensor y2 = raw::conv2d(p1, w2, b2, 1, 2);                        // (64, 64, 14, 14)
  auto [p2, i2] = raw::max_pool2d_with_indices(raw::relu(y2), 2);   // (64, 64, 7, 7)
  Tensor g1 = randn(y1.sizes(), {}, &gen), g2 = randn(y2.sizes(), {}, &gen);
  Tensor gp1 = randn(p1.sizes(), {}, &gen), gp2 = randn(p2.sizes(), {}, &gen);
  // --amp: every kernel operand in the lower precision, as autocast hands them to the kernels.
  const DType dtype = amp == "bf16" ? DType::bf16 : amp == "fp16" ? DType::f16 : DType::f32;
  for (Tensor* t : {&x, &w1, &b1, &w2, &b2, &y1, &p1, &y2, &g1, &g2, &gp1, &gp2}) *t = raw::to(*t, dtype);

  std::vector<Item> items;
  auto add = [&](const std::string& name, double gflop, const std::function<void()>& f) {
    items.push_back({name, time_call(reps, 5, f), gflop});
  };
  Tensor sink;
  add("conv1 forward (64,1,28,28) -> (64,32,28,28)", conv_gflop(n, 1, 32, 5, 784),
      [&] { sink = raw::conv2d(x, w1, b1, 1, 2); });
  add("conv1 grad weight", conv_gflop(n, 1, 32, 5, 784),
      [&] { sink = raw::conv2d_backward_weight(g1, x, w1.sizes(), pad2); });
  add("conv1 grad bias", 0, [&] { sink = raw::conv2d_backward_bias(g1); });
  add("pool1 forward (64,32,28,28) -> (64,32,14,14)", 0, [&] { sink = raw::max_pool2d_with_indices(y1, 2).first; });
  add("pool1 backward", 0, [&] { sink = raw::max_pool2d_backward(gp1, i1, y1.sizes()); });
  add("conv2 forward (64,32,14,14) -> (64,64,14,14)", conv_gflop(n, 32, 64, 5, 196),
      [&] { sink = raw::conv2d(p1, w2, b2, 1, 2); });
  add("conv2 grad input", conv_gflop(n, 32, 64, 5, 196),
      [&] { sink = raw::conv2d_backward_input(g2, w2, p1.sizes(), pad2); });
  add("conv2 grad weight", conv_gflop(n, 32, 64, 5, 196),
      [&] { sink = raw::conv2d_backward_weight(g2, p1, w2.sizes(), pad2); });
  add("conv2 grad bias", 0, [&] { sink = raw::conv2d_backward_bias(g2); });
  add("pool2 forward (64,64,14,14) -> (64,64,7,7)", 0, [&] { sink = raw::max_pool2d_with_indices(y2, 2).first; });
  add("pool2 backward", 0, [&] { sink = raw::max_pool2d_backward(gp2, i2, y2.sizes()); });

  optim::SGD sgd(model.parameters(), {.lr = 0.01, .momentum = 0.9});
  Tensor x_f32 = raw::to(x, DType::f32);
  const double step = time_call(reps, 5, [&] {
    Tensor loss;
    {
      auto scope = autocast(DeviceType::kCPU, amp == "fp16" ? DType::f16 : DType::bf16, amp != "off");
      loss = cross_entropy(model.forward(x_f32), target);
    }
    sgd.zero_grad();
    loss.backward();
    sgd.step();
  });

  std::printf("syncgrad-bench conv: CNN training step, batch %lld, %s, threads %d, %d reps (median)\n\n",
              static_cast<long long>(n), amp == "off" ? "float32" : ("autocast " + amp).c_str(), threads, reps);
  std::printf("%-48s %10s %8s %10s\n", "kernel", "ms", "% step", "GFLOP/s");
  double listed = 0;
  for (const Item& it : items) {
    listed += it.seconds;
    std::printf("%-48s %10.2f %7.1f%% ", it.name.c_str(), it.seconds * 1e3, 100.0 * it.seconds / step);
    if (it.gflop > 0) std::printf("%10.1f\n", it.gflop / it.seconds);
    else std::printf("%10s\n", "-");
  }
  std::printf("%-48s %10.2f %7.1f%%\n", "rest (linear, relu, loss, optimizer, autograd)", (step - listed) * 1e3,
              100.0 * (step - listed) / step);
  std::printf("%-48s %10.2f %7s  (%.0f samples/s)\n", "whole step", step * 1e3, "100%",
              static_cast<double>(n) / step);
  return 0;
}
