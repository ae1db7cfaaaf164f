// The training loop.
#include "tools/train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>

#include "data/fashion_mnist.h"
#include "models/models.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "syncgrad.h"
#include "tools/train/checkpoint.h"
#include "tools/train/metrics_log.h"

namespace syncgrad::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

std::string format_duration(double seconds) {
  long s = std::lround(seconds);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
  return buffer;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<Tensor> params) {
  if (c.optimizer == "sgd") {
    return std::make_unique<optim::SGD>(params, optim::SGDOptions{.lr = c.lr, .momentum = c.momentum,
                                                                  .weight_decay = c.weight_decay});
  }
  if (c.optimizer == "adam") {
    return std::make_unique<optim::Adam>(params, optim::AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  }
  if (c.optimizer == "adamw") {
    return std::make_unique<optim::AdamW>(params, optim::AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  }
  throw ValueError("--optimizer: unknown optimizer \"" + c.optimizer + "\"; choose sgd, adam or adamw");
}

// The order of samples in `epoch`: a permutation that depends only on (seed, epoch), or 0..n-1.
Tensor epoch_order(const TrainConfig& c, int epoch, int64_t n) {
  if (!c.shuffle) return arange(n);
  Generator gen = Generator(c.seed).split(static_cast<uint64_t>(epoch));
  return randperm(n, &gen);
}

double evaluate(nn::Module& model, const data::MnistSplit& split) {
  NoGradGuard no_grad;
  model.eval();
  int64_t n = split.labels.numel(), correct = 0;
  constexpr int64_t kBatch = 1000;
  for (int64_t begin = 0; begin < n; begin += kBatch) {
    int64_t len = std::min(kBatch, n - begin);
    Tensor logits = model.forward(raw::narrow(split.images, 0, begin, len));
    Tensor predicted = argmax(logits, 1);
    correct += raw::sum(eq(predicted, raw::narrow(split.labels, 0, begin, len))).item<int64_t>();
  }
  model.train();
  return static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace

TrainSummary run_training(const TrainConfig& c, std::ostream& out) {
  set_num_threads(c.threads);
  if (!c.checkpoint_dir.empty()) ensure_writable_directory(c.checkpoint_dir);
  std::string dir = c.data_dir.empty() ? data::default_fashion_mnist_dir() : c.data_dir;
  data::MnistSplit train_set = data::load_fashion_mnist(dir, true);
  data::MnistSplit test_set = data::load_fashion_mnist(dir, false);

  Generator init_gen(c.seed);
  std::shared_ptr<nn::Module> model = models::make_model(c.model, &init_gen);
  if (!c.init_from.empty()) load_weights(c.init_from, *model);
  std::unique_ptr<optim::Optimizer> optimizer = make_optimizer(c, model->parameters());
  manual_seed(c.seed);

  TrainingPosition position;
  if (!c.resume.empty()) {
    position = load_checkpoint(c.resume, c.model, *model, *optimizer);
    default_generator().set_state(position.rng_seed, position.rng_offset);
    out << "resumed from " << c.resume << " at epoch " << position.epoch + 1 << ", step " << position.step << "\n";
  }
  std::optional<MetricsLog> log;
  if (!c.log_file.empty()) log.emplace(c.log_file);

  const int64_t n = train_set.labels.numel();
  const int64_t batches_per_epoch = (n + c.batch_size - 1) / c.batch_size;
  const int64_t planned_steps = c.max_steps > 0 ? std::min<int64_t>(c.max_steps, batches_per_epoch * c.epochs)
                                                : batches_per_epoch * c.epochs;
  out << "training " << c.model << " on " << n << " images (" << dir << "), " << c.epochs << " epoch(s), batch "
      << c.batch_size << ", " << c.optimizer << " lr " << c.lr << ", " << c.threads << " thread(s)\n";

  TrainSummary summary;
  cpu_allocator().reset_peak();
  auto start = Clock::now();
  auto window_start = start;
  int64_t window_samples = 0;
  bool stop = false;
  for (int epoch = position.epoch; epoch < c.epochs && !stop; ++epoch) {
    Tensor order = epoch_order(c, epoch, n);
    for (int64_t b = position.batch_in_epoch; b < batches_per_epoch; ++b) {
      if (c.max_steps > 0 && position.step >= c.max_steps) {
        stop = true;
        break;
      }
      int64_t begin = b * c.batch_size, len = std::min(c.batch_size, n - begin);
      Tensor index = raw::narrow(order, 0, begin, len);
      Tensor images = raw::index_select(train_set.images, 0, index);  // (B, 1, 28, 28)
      Tensor labels = raw::index_select(train_set.labels, 0, index);  // (B)
      Tensor loss = cross_entropy(model->forward(images), labels);
      optimizer->zero_grad();
      loss.backward();
      double loss_value = loss.item<double>();
      if (!std::isfinite(loss_value)) {
        throw NonFiniteLossError("training stopped: the loss became " + std::to_string(loss_value) + " at step " +
                                 std::to_string(position.step + 1) + " (epoch " + std::to_string(epoch + 1) +
                                 ", batch " + std::to_string(b + 1) + "); lower --lr (now " + std::to_string(c.lr) +
                                 ") or check the input data");
      }
      optimizer->step();
      ++position.step;
      position.batch_in_epoch = b + 1;
      summary.samples += len;
      window_samples += len;
      if (position.step % c.log_every == 0 || position.step == planned_steps) {
        double window = seconds_since(window_start);
        double rate = window > 0 ? window_samples / window : 0;
        double elapsed = seconds_since(start);
        double eta = rate > 0 ? (planned_steps - position.step) * static_cast<double>(c.batch_size) / rate : 0;
        char line[160];
        std::snprintf(line, sizeof line, "epoch %d/%d  step %lld/%lld  loss %.4f  %.0f samples/s  ETA %s\n",
                      epoch + 1, c.epochs, static_cast<long long>(position.step),
                      static_cast<long long>(planned_steps), loss_value, rate, format_duration(eta).c_str());
        out << line << std::flush;
        if (log) log->write({position.step, epoch + 1, loss_value, optimizer->lr(), rate, elapsed});
        window_start = Clock::now();
        window_samples = 0;
      }
    }
    if (!stop) {
      position.epoch = epoch + 1;
      position.batch_in_epoch = 0;
    }
    position.rng_seed = default_generator().seed();
    position.rng_offset = default_generator().offset();
    if (!c.checkpoint_dir.empty()) {
      save_checkpoint(c.checkpoint_dir, c.model, *model, *optimizer, position, c);
      out << "checkpoint saved to " << c.checkpoint_dir << " (step " << position.step << ")\n";
    }
  }
  summary.wall_seconds = seconds_since(start);
  summary.steps = position.step;
  summary.samples_per_second = summary.wall_seconds > 0 ? summary.samples / summary.wall_seconds : 0;
  summary.test_accuracy = evaluate(*model, test_set);
  summary.peak_tensor_bytes = cpu_allocator().stats().peak_allocated_bytes;
  summary.peak_rss_kib = peak_rss_kib();
  return summary;
}

}  // namespace syncgrad::train
