// syncgrad-bench checkpoint: what a syncgrad-train checkpoint costs, beside what the disk can do. For each model
// (by default the trainer's GPT in its default config with AdamW, and ResNet-18 with SGD and momentum), after one
// optimizer step so that its state exists:
//   save  train::save_checkpoint into a step directory (both safetensors files, manifest with CRC32s, fsync of
//         every file and the directory, rename), as syncgrad-train's rank 0 does;
//   load  train::load_checkpoint as --resume does (manifest check: every file's size and CRC32, then both files
//         read and restored into a fresh model and optimizer), once from the page cache (warm) and once after the
//         checkpoint's pages were dropped from it (posix_fadvise DONTNEED on the fsynced files: cold, from disk);
//   disk  a file of the checkpoint's size written in 4 MiB blocks and fsynced in the same directory (sequential
//         write), then read back cold: the ceiling for save and cold load.
// Each figure is the median of --reps; MB is 10^6 bytes.
//   syncgrad-bench checkpoint [--dir DIR] [--models gpt,resnet18] [--model-config K=V,...] [--reps N]
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/subcommands.h"
#include "models/gpt.h"
#include "models/models.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "syncgrad.h"
#include "tensor/check.h"
#include "tensor/io/directory_lock.h"
#include "tools/cli_checks.h"
#include "tools/train/checkpoint.h"

namespace {

using namespace syncgrad;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr size_t kBlockBytes = size_t{4} << 20;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A model and its optimizer after one step (so the optimizer's per-parameter state exists), as the trainer
// builds them for --model `name`.
struct Trained {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::string optimizer_name;
};

Trained make_trained(const std::string& name, const std::string& gpt_config, bool step) {
  Generator gen(1);
  Trained t;
  Tensor input;
  if (name == "gpt") {
    const models::GPTConfig config = models::GPTConfig::parse(gpt_config);
    t.model = std::make_shared<models::GPT>(config, &gen);
    t.optimizer = std::make_unique<optim::AdamW>(t.model->parameters(), optim::AdamWOptions{.lr = 3e-4});
    t.optimizer_name = "AdamW";
    input = zeros({1, std::min<int64_t>(16, config.block_size)}, {.dtype = DType::i64});
  } else {
    t.model = models::make_model(name, &gen);
    t.optimizer = std::make_unique<optim::SGD>(t.model->parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    t.optimizer_name = "SGD+momentum";
    const bool images = name.rfind("resnet", 0) == 0;
    input = images ? randn({2, 3, 32, 32}, {}, &gen) : randn({2, 1, 28, 28}, {}, &gen);
    if (name == "mlp") input = input.reshape({2, 784});
  }
  if (step) {
    t.model->forward(input).sum().backward();
    t.optimizer->step();
  }
  return t;
}

uint64_t directory_bytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

// Drops the (fsynced, so clean) pages of the files in `dir`, or of the file `path`, from the page cache.
void drop_cached_pages(const std::string& path) {
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    for (const auto& entry : fs::directory_iterator(path)) {
      if (entry.is_regular_file()) files.push_back(entry.path().string());
    }
  } else {
    files.push_back(path);
  }
  for (const std::string& file : files) {
    const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    SYNCGRAD_CHECK(fd >= 0, IOError, "cannot open ", file, " to drop its cached pages");
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
}

// Writes `bytes` in 4 MiB blocks to `file` and fsyncs it; returns the seconds taken.
double timed_sequential_write(const std::string& file, uint64_t bytes) {
  std::vector<char> block(kBlockBytes, 'x');
  const auto start = Clock::now();
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SYNCGRAD_CHECK(fd >= 0, IOError, "cannot create ", file, "; pass a writable --dir");
  for (uint64_t left = bytes; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kBlockBytes));
    const ssize_t written = write(fd, block.data(), n);
    if (written <= 0) {
      close(fd);
      throw IOError("writing " + file + " failed (a full disk?)");
    }
    left -= static_cast<uint64_t>(written);
  }
  const bool synced = fsync(fd) == 0;
  close(fd);
  SYNCGRAD_CHECK(synced, IOError, "fsync of ", file, " failed");
  return seconds_since(start);
}

// Reads `file` to its end in 4 MiB blocks; returns the seconds taken.
double timed_sequential_read(const std::string& file) {
  std::vector<char> block(kBlockBytes);
  const auto start = Clock::now();
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  SYNCGRAD_CHECK(fd >= 0, IOError, "cannot open ", file);
  while (read(fd, block.data(), block.size()) > 0) {
  }
  close(fd);
  return seconds_since(start);
}

struct Row {
  std::string model;
  std::string optimizer;
  int64_t parameters = 0;
  uint64_t bytes = 0;
  double save = 0, load_warm = 0, load_cold = 0, disk_write = 0, disk_read = 0;  // seconds, medians
};

Row measure(const std::string& name, const std::string& gpt_config, const std::string& root, int reps) {
  Trained source = make_trained(name, gpt_config, true);
  Row row;
  row.model = name != "gpt" ? name : gpt_config.empty() ? "gpt (default config)" : "gpt (" + gpt_config + ")";
  row.optimizer = source.optimizer_name;
  for (const Tensor& p : source.model->parameters()) row.parameters += p.numel();

  const std::string dir = (fs::path(root) / ("checkpoint-bench-" + name)).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  train::TrainConfig config;
  config.model = name;
  std::vector<double> save, load_warm, load_cold, disk_write, disk_read;
  {
    io::DirectoryLock lock(dir, "--dir");
    for (int rep = 0; rep < reps; ++rep) {
      train::TrainingPosition position;
      position.step = rep + 1;
      auto start = Clock::now();
      const std::string saved = train::save_checkpoint(lock, name, *source.model, *source.optimizer, position,
                                                       config, 1);
      save.push_back(seconds_since(start));
      row.bytes = directory_bytes(saved);

      Trained target = make_trained(name, gpt_config, false);
      std::ostringstream notes;
      start = Clock::now();
      train::load_checkpoint(saved, name, *target.model, *target.optimizer, notes);
      load_warm.push_back(seconds_since(start));
      drop_cached_pages(saved);
      start = Clock::now();
      train::load_checkpoint(saved, name, *target.model, *target.optimizer, notes);
      load_cold.push_back(seconds_since(start));

      const std::string plain = (fs::path(dir) / "sequential.bin").string();
      disk_write.push_back(timed_sequential_write(plain, row.bytes));
      drop_cached_pages(plain);
      disk_read.push_back(timed_sequential_read(plain));
      fs::remove(plain);
    }
  }
  fs::remove_all(dir);
  row.save = median(save);
  row.load_warm = median(load_warm);
  row.load_cold = median(load_cold);
  row.disk_write = median(disk_write);
  row.disk_read = median(disk_read);
  return row;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

double megabytes_per_second(uint64_t bytes, double seconds) { return seconds > 0 ? bytes / 1e6 / seconds : 0; }

void print_table(const std::vector<Row>& rows) {
  std::printf("%-34s %-13s %8s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "model", "optimizer", "Mparams", "ckpt MB",
              "save s", "save MB/s", "disk wr", "save/disk", "load s", "load MB/s", "cold s", "cold MB/s");
  for (const Row& r : rows) {
    const double write_rate = megabytes_per_second(r.bytes, r.disk_write);
    const double save_rate = megabytes_per_second(r.bytes, r.save);
    std::printf("%-34s %-13s %8.2f %9.1f %9.3f %9.0f %9.0f %8.0f%% %9.3f %9.0f %9.3f %9.0f\n", r.model.c_str(),
                r.optimizer.c_str(), r.parameters / 1e6, r.bytes / 1e6, r.save, save_rate, write_rate,
                write_rate > 0 ? 100.0 * save_rate / write_rate : 0.0, r.load_warm,
                megabytes_per_second(r.bytes, r.load_warm), r.load_cold, megabytes_per_second(r.bytes, r.load_cold));
  }
  std::printf("\n%-34s %12s %12s\n", "disk, same directory", "write MB/s", "cold read MB/s");
  for (const Row& r : rows) {
    std::printf("%-34s %12.0f %12.0f\n", (std::to_string(r.bytes / 1000000) + " MB file, 4 MiB blocks, fsync").c_str(),
                megabytes_per_second(r.bytes, r.disk_write), megabytes_per_second(r.bytes, r.disk_read));
  }
}

}  // namespace

int bench_checkpoint_main(int argc, char** argv) {
  std::string dir = fs::temp_directory_path().string();
  std::string model_list = "gpt,resnet18";
  std::string gpt_config;
  int reps = 3;
  CLI::App app{"syncgrad-bench checkpoint: checkpoint save and load time and size (syncgrad-train's files) beside "
               "the disk's sequential write and read speed in the same directory"};
  app.add_option("--dir", dir, "where to write (the disk measured); a subdirectory is made and removed")
      ->capture_default_str();
  const std::vector<std::string> known = models::model_names();
  app.add_option("--models", model_list, "comma-separated: gpt and any of " + joined(known))->capture_default_str();
  app.add_option("--model-config", gpt_config,
                 "the GPT's sizes as key=value pairs, as syncgrad-train --model-config takes them (default: its "
                 "default)");
  app.add_option("--reps", reps, "saves and loads per model (the median is reported)")->check(cli::at_least(1));
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<std::string> names;
    std::stringstream list(model_list);
    for (std::string name; std::getline(list, name, ',');) {
      SYNCGRAD_CHECK(name == "gpt" || std::find(known.begin(), known.end(), name) != known.end(), ValueError,
                     "--models: unknown model \"", name, "\"; use gpt, ", joined(known));
      names.push_back(name);
    }
    SYNCGRAD_CHECK(!names.empty(), ValueError, "--models: name at least one model");
    SYNCGRAD_CHECK(fs::is_directory(dir), IOError, "--dir ", dir, " is not a directory");
    if (std::find(names.begin(), names.end(), "gpt") != names.end()) models::GPTConfig::parse(gpt_config);
    set_num_threads(1);
    std::printf("syncgrad-bench checkpoint: %s, median of %d; MB = 10^6 bytes; cold = after the files' pages were "
                "dropped from the page cache\n\n", dir.c_str(), reps);
    std::vector<Row> rows;
    for (const std::string& name : names) rows.push_back(measure(name, gpt_config, dir, reps));
    print_table(rows);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-bench checkpoint: error: %s\n", e.what());
    return 1;
  }
}
