// syncgrad-demo: the main job until the Fashion-MNIST trainer lands. Trains a small MLP (2-64-64-3) with
// plain SGD on a synthetic three-arm spiral and prints the loss falling and the final accuracy.
// Usage: syncgrad-demo [--steps N] [--lr X] [--seed S]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "syncgrad.h"

using namespace syncgrad;

namespace {

struct Options {
  int steps = 600;
  double lr = 0.5;
  uint64_t seed = 0;
};

template <class T>
T parse_number(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    T value;
    if constexpr (std::is_floating_point_v<T>) value = static_cast<T>(std::stod(text, &used));
    else value = static_cast<T>(std::stoll(text, &used));
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw ValueError("syncgrad-demo: " + flag + " expects a number, got \"" + text + "\"");
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) throw ValueError(std::string("syncgrad-demo: ") + flag + " needs a value");
      return argv[++i];
    };
    if (arg == "--steps") {
      options.steps = parse_number<int>(arg, value("--steps"));
    } else if (arg == "--lr") {
      options.lr = parse_number<double>(arg, value("--lr"));
    } else if (arg == "--seed") {
      options.seed = parse_number<uint64_t>(arg, value("--seed"));
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: syncgrad-demo [--steps N] [--lr X] [--seed S]\n"
                  "Trains an MLP on a synthetic 3-class spiral and prints the loss and accuracy.\n");
      std::exit(0);
    } else {
      throw ValueError("syncgrad-demo: unknown argument \"" + arg + "\"; see --help");
    }
  }
  if (options.steps < 1) throw ValueError("syncgrad-demo: --steps must be >= 1, got " + std::to_string(options.steps));
  return options;
}

// Three interleaved spiral arms: points (N*3, 2) and labels (N*3).
std::pair<Tensor, Tensor> spiral(int64_t per_class, Generator& gen) {
  std::vector<float> points;
  std::vector<int64_t> labels;
  std::vector<float> noise = to_vector<float>(randn({per_class * 3}, {}, &gen));
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < per_class; ++i) {
      double r = static_cast<double>(i) / per_class;
      double angle = c * 4.0 + r * 4.0 + noise[c * per_class + i] * 0.2;
      points.push_back(static_cast<float>(r * std::sin(angle)));
      points.push_back(static_cast<float>(r * std::cos(angle)));
      labels.push_back(c);
    }
  }
  return {from_vector(points, {per_class * 3, 2}), from_vector(labels, {per_class * 3})};
}

Tensor init_weight(int64_t out, int64_t in, Generator& gen) {
  // Uniform(-1/sqrt(in), 1/sqrt(in)), PyTorch's nn.Linear default bound.
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  Tensor w = raw::add(raw::mul(rand({out, in}, {}, &gen), 2 * bound), -bound);
  w.requires_grad_(true);
  return w;
}

}  // namespace

int main(int argc, char** argv) try {
  Options options = parse(argc, argv);
  Generator gen(options.seed);
  auto [x, y] = spiral(200, gen);
  std::vector<Tensor> params = {init_weight(64, 2, gen),  zeros({64}, {.requires_grad = true}),
                                init_weight(64, 64, gen), zeros({64}, {.requires_grad = true}),
                                init_weight(3, 64, gen),  zeros({3}, {.requires_grad = true})};
  auto forward = [&](const Tensor& input) {
    Tensor h = relu(linear(input, params[0], params[1]));
    h = relu(linear(h, params[2], params[3]));
    return linear(h, params[4], params[5]);
  };
  std::printf("syncgrad-demo: MLP 2-64-64-3 on a 600-point spiral, SGD lr %.3g, %d steps\n", options.lr, options.steps);
  for (int step = 1; step <= options.steps; ++step) {
    Tensor loss = cross_entropy(forward(x), y);
    for (Tensor& p : params) p.set_grad(Tensor());
    loss.backward();
    {
      NoGradGuard no_grad;
      for (Tensor& p : params) raw::add_(p, p.grad(), -options.lr);
    }
    if (step == 1 || step % (options.steps / 10 > 0 ? options.steps / 10 : 1) == 0) {
      std::printf("step %4d  loss %.4f\n", step, loss.item<double>());
    }
  }
  NoGradGuard no_grad;
  Tensor predicted = argmax(forward(x), 1);
  double accuracy = raw::sum(raw::to(eq(predicted, y), DType::f32)).item<double>() / static_cast<double>(y.numel());
  std::printf("train accuracy %.1f%%\n", 100.0 * accuracy);
  return 0;
} catch (const syncgrad::Error& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 2;
}
