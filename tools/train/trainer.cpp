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
#include "data/loader.h"
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

  // Batches come from a DataLoader in the order the trainer always used: RandomSampler(n, seed) at each
  // epoch (or file order); its state is the checkpoint's (epoch, batch_in_epoch).
  const int64_t n = train_set.labels.numel();
  auto train_data = std::make_shared<data::TensorDataset>(train_set.images, train_set.labels);
  data::DataLoader loader(train_data, {.batch_size = c.batch_size, .shuffle = c.shuffle, .num_workers = c.workers,
                                       .seed = c.seed});
  loader.load_state({position.epoch, position.batch_in_epoch});
  const int64_t batches_per_epoch = loader.num_batches();
  const int64_t planned_steps = c.max_steps > 0 ? std::min<int64_t>(c.max_steps, batches_per_epoch * c.epochs)
                                                : batches_per_epoch * c.epochs;
  out << "training " << c.model << " on " << n << " images (" << dir << "), " << c.epochs << " epoch(s), batch "
      << c.batch_size << ", " << c.optimizer << " lr " << c.lr << ", " << c.threads << " thread(s), " << c.workers
      << " data worker(s)\n";

  TrainSummary summary;
  cpu_allocator().reset_peak();
  auto start = Clock::now();
  auto window_start = start;
  double window_wait_start = 0;
  int64_t window_samples = 0;
  bool stop = c.max_steps > 0 && position.step >= c.max_steps;
  for (int epoch = position.epoch; epoch < c.epochs && !stop; ++epoch) {
    for (data::Batch& batch : loader) {
      const int64_t len = batch.target.numel();
      Tensor loss = cross_entropy(model->forward(batch.data), batch.target);  // data (B, 1, 28, 28), target (B)
      optimizer->zero_grad();
      loss.backward();
      double loss_value = loss.item<double>();
      if (!std::isfinite(loss_value)) {
        throw NonFiniteLossError("training stopped: the loss became " + std::to_string(loss_value) + " at step " +
                                 std::to_string(position.step + 1) + " (epoch " + std::to_string(epoch + 1) +
                                 ", batch " + std::to_string(loader.state().batches_consumed) + "); lower --lr (now " +
                                 std::to_string(c.lr) + ") or check the input data");
      }
      optimizer->step();
      ++position.step;
      summary.samples += len;
      window_samples += len;
      if (position.step % c.log_every == 0 || position.step == planned_steps) {
        double window = seconds_since(window_start);
        double rate = window > 0 ? window_samples / window : 0;
        double wait_percent = window > 0 ? 100.0 * (loader.data_wait_seconds() - window_wait_start) / window : 0;
        double elapsed = seconds_since(start);
        double eta = rate > 0 ? (planned_steps - position.step) * static_cast<double>(c.batch_size) / rate : 0;
        char line[200];
        std::snprintf(line, sizeof line,
                      "epoch %d/%d  step %lld/%lld  loss %.4f  %.0f samples/s  data-wait %.1f%%  ETA %s\n",
                      epoch + 1, c.epochs, static_cast<long long>(position.step),
                      static_cast<long long>(planned_steps), loss_value, rate, wait_percent,
                      format_duration(eta).c_str());
        out << line << std::flush;
        if (log) log->write({position.step, epoch + 1, loss_value, optimizer->lr(), rate, elapsed, wait_percent});
        window_start = Clock::now();
        window_wait_start = loader.data_wait_seconds();
        window_samples = 0;
      }
      if (c.max_steps > 0 && position.step >= c.max_steps) {
        stop = true;
        break;
      }
    }
    const data::LoaderState next = loader.state();
    position.epoch = static_cast<int>(next.epoch);
    position.batch_in_epoch = next.batches_consumed;
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
