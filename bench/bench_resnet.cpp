// syncgrad-bench resnet: where a ResNet training step (float32, CIFAR-sized input) spends its time. Times every
// distinct conv shape of the model (forward, grad input, grad weight; times its number of uses), the fused batch
// norm + ReLU and batch norm + residual add + ReLU (forward and backward) on the step's own shapes, then the whole
// step (forward, cross entropy, backward, SGD with momentum). After the table, the fused ops beside the separate
// ones they replace (batch_norm, add, relu), alternated call by call. Times are thread CPU time, so a busy
// machine slows the figures less than wall time would; each is the fastest of --reps calls after a warm-up.
// GFLOP/s counts a direct convolution's 2 * C_out * C_in * kH * kW * OH * OW * N FLOPs, so Winograd layers can
// exceed the FMA peak.
//   syncgrad-bench resnet [--model resnet18|resnet20] [--batch N] [--reps N]
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench/subcommands.h"
#include "optim/sgd.h"
#include "syncgrad.h"

namespace {

using namespace syncgrad;

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The fastest of `reps` calls of f in CPU seconds, after one warm-up call: on a shared machine the other
// processes only ever add time (cache and memory contention), so the minimum is the steadiest figure.
double time_call(int reps, const std::function<void()>& f) {
  f();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double start = thread_seconds();
    f();
    best = std::min(best, thread_seconds() - start);
  }
  return best;
}

// A conv of the model: input shape, weight shape, stride (padding is kernel / 2 throughout).
struct ConvUse {
  Shape input, weight;
  int64_t stride;
  auto key() const { return std::tie(input, weight, stride); }
  bool operator<(const ConvUse& o) const { return key() < o.key(); }
};

// The fastest of `reps` calls of f and of g, called alternately (f g f g ...) after a warm-up call of each.
std::pair<double, double> time_alternated(int reps, const std::function<void()>& f, const std::function<void()>& g) {
  f();
  g();
  double best_f = 1e30, best_g = 1e30;
  for (int r = 0; r < reps; ++r) {
    double start = thread_seconds();
    f();
    best_f = std::min(best_f, thread_seconds() - start);
    start = thread_seconds();
    g();
    best_g = std::min(best_g, thread_seconds() - start);
  }
  return {best_f, best_g};
}

// Walks the model as its forward does and records each conv's shapes and the shapes its fused normalisations
// run on.
struct Shapes {
  std::map<ConvUse, int> convs;
  std::map<Shape, int> bn_relu;      // relu(bn(x)): the stem's and each block's first
  std::map<Shape, int> bn_add_relu;  // relu(bn(x) + identity): each block's second
};

Shape conv_out(const Shape& in, const Shape& w, int64_t stride) {
  const int64_t pad = w[2] / 2;
  return {in[0], w[0], (in[2] + 2 * pad - w[2]) / stride + 1, (in[3] + 2 * pad - w[3]) / stride + 1};
}

Shapes walk(const models::ResNet& model, const Shape& input) {
  Shapes s;
  auto use = [&](const nn::Conv2d& conv, const Shape& in) {
    ++s.convs[{in, conv.weight.sizes(), conv.params.stride.h}];
    return conv_out(in, conv.weight.sizes(), conv.params.stride.h);
  };
  Shape x = use(*model.conv1, input);
  ++s.bn_relu[x];
  for (const auto& layer : model.layers) {
    for (const auto& child : *layer) {
      const auto& block = static_cast<const models::BasicBlock&>(*child);
      Shape h = use(*block.conv1, x);
      ++s.bn_relu[h];
      h = use(*block.conv2, h);
      ++s.bn_add_relu[h];
      if (block.downsample) use(static_cast<const nn::Conv2d&>(*(*block.downsample)[0]), x);
      x = h;
    }
  }
  return s;
}

double conv_gflop(const ConvUse& c) {
  const Shape out = conv_out(c.input, c.weight, c.stride);
  return 2.0 * static_cast<double>(out[0] * out[1] * out[2] * out[3] * c.weight[1] * c.weight[2] * c.weight[3]) /
         1e9;
}

std::string shape_text(const Shape& s) {
  std::string text;
  for (int64_t d : s) {
    if (!text.empty()) text += 'x';
    text += std::to_string(d);
  }
  return text;
}

struct Row {
  std::string name;
  int uses;
  double seconds;  // per use
  double gflop;    // per use; 0: not a GEMM-shaped kernel
};

}  // namespace

int bench_resnet_main(int argc, char** argv) {
  std::string model_name = "resnet20";
  int64_t batch = 0;
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--model" && i + 1 < argc) {
      model_name = argv[++i];
    } else if ((arg == "--batch" || arg == "--reps") && i + 1 < argc) {
      const int value = std::atoi(argv[++i]);
      if (value < 1) {
        std::fprintf(stderr, "%s: %s needs a positive integer\n", argv[0], arg.c_str());
        return 2;
      }
      if (arg == "--batch") batch = value;
      else reps = value;
    } else {
      std::fprintf(stderr, "usage: %s [--model resnet18|resnet20] [--batch N] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  if (model_name != "resnet18" && model_name != "resnet20") {
    std::fprintf(stderr, "%s: --model must be resnet18 or resnet20, got %s\n", argv[0], model_name.c_str());
    return 2;
  }
  if (batch == 0) batch = model_name == "resnet18" ? 64 : 128;
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  set_num_threads(1);

  Generator gen(5);
  auto model = model_name == "resnet18" ? models::resnet18(&gen) : models::resnet20(&gen);
  const Shape input_shape{batch, 3, 32, 32};
  const Shapes shapes = walk(*model, input_shape);

  std::vector<Row> rows;
  Tensor sink;
  for (const auto& [c, uses] : shapes.convs) {
    Tensor x = randn(c.input, {}, &gen), w = randn(c.weight, {}, &gen);
    Tensor gy = randn(conv_out(c.input, c.weight, c.stride), {}, &gen);
    const Conv2dParams p{.stride = c.stride, .padding = c.weight[2] / 2};
    const std::string name = "conv " + shape_text(c.weight) + " s" + std::to_string(c.stride) + " on " +
                             shape_text({c.input[2], c.input[3]});
    rows.push_back({name + " fwd", uses, time_call(reps, [&] { sink = raw::conv2d(x, w, {}, p.stride, p.padding); }),
                    conv_gflop(c)});
    if (c.input[1] != 3) {
      rows.push_back({name + " dX", uses,
                      time_call(reps, [&] { sink = raw::conv2d_backward_input(gy, w, c.input, p); }), conv_gflop(c)});
    }
    rows.push_back({name + " dW", uses,
                    time_call(reps, [&] { sink = raw::conv2d_backward_weight(gy, x, c.weight, p); }), conv_gflop(c)});
  }
  // Fused forward + backward (residual: with the add) and the separate ops it replaces, on one shape.
  struct Normalisation {
    std::string name;
    Shape shape;
    int uses;
    bool residual;
  };
  std::vector<Normalisation> normalisations;
  for (const auto& [shape, uses] : shapes.bn_relu) normalisations.push_back({"bn + relu", shape, uses, false});
  for (const auto& [shape, uses] : shapes.bn_add_relu) normalisations.push_back({"bn + add + relu", shape, uses, true});
  std::vector<std::tuple<std::string, double, double>> fused_vs_separate;
  for (const Normalisation& n : normalisations) {
    const Tensor x = randn(n.shape, {}, &gen), identity = randn(n.shape, {}, &gen), gy = randn(n.shape, {}, &gen);
    const Tensor w = ones({n.shape[1]}).requires_grad_(), b = zeros({n.shape[1]}).requires_grad_();
    const Tensor rm = zeros({n.shape[1]}), rv = ones({n.shape[1]});
    const Tensor residual = n.residual ? identity : Tensor();
    auto fused = [&] {
      batch_norm_relu(x.detach().requires_grad_(true), rm, rv, w, b, true, 0.1, 1e-5, residual).backward(gy);
    };
    auto separate = [&] {
      const Tensor y = batch_norm(x.detach().requires_grad_(true), rm, rv, w, b, true, 0.1, 1e-5);
      relu(n.residual ? add(y, residual) : y).backward(gy);
    };
    const auto [fused_seconds, separate_seconds] = time_alternated(reps, fused, separate);
    const std::string name = n.name + " fwd+bwd " + shape_text(n.shape);
    rows.push_back({name, n.uses, fused_seconds, 0});
    fused_vs_separate.emplace_back(name, fused_seconds, separate_seconds);
  }

  Tensor x = randn(input_shape, {}, &gen);
  Tensor target = randint(0, 10, {batch}, {.dtype = DType::i64}, &gen);
  optim::SGD sgd(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const double step = time_call(reps, [&] {
    Tensor loss = cross_entropy(model->forward(x), target);
    sgd.zero_grad();
    loss.backward();
    sgd.step();
  });

  std::printf("syncgrad-bench resnet: %s training step, batch %lld, float32, 1 thread, fastest of %d (CPU time)\n\n",
              model_name.c_str(), static_cast<long long>(batch), reps);
  std::printf("%-46s %4s %9s %9s %7s %8s\n", "kernel", "uses", "ms/use", "ms total", "% step", "GFLOP/s");
  double listed = 0;
  for (const Row& r : rows) {
    const double total = r.seconds * r.uses;
    listed += total;
    std::printf("%-46s %4d %9.2f %9.2f %6.1f%% ", r.name.c_str(), r.uses, r.seconds * 1e3, total * 1e3,
                100.0 * total / step);
    if (r.gflop > 0) std::printf("%8.1f\n", r.gflop / r.seconds);
    else std::printf("%8s\n", "-");
  }
  std::printf("%-46s %4s %9s %9.2f %6.1f%%\n", "rest (pool, fc, loss, optimizer, autograd)", "", "",
              (step - listed) * 1e3, 100.0 * (step - listed) / step);
  std::printf("%-46s %4s %9s %9.2f %7s  (%.1f samples/s of CPU time)\n", "whole step", "", "", step * 1e3, "100%",
              static_cast<double>(batch) / step);
  std::printf("\nfused normalisations beside the separate batch_norm, add and relu (ms per use, alternated)\n");
  std::printf("%-46s %9s %9s %8s\n", "op", "fused", "separate", "speed-up");
  for (const auto& [name, fused_seconds, separate_seconds] : fused_vs_separate) {
    std::printf("%-46s %9.2f %9.2f %7.2fx\n", name.c_str(), fused_seconds * 1e3, separate_seconds * 1e3,
                separate_seconds / fused_seconds);
  }
  return 0;
}
