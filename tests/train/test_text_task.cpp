// The text task behind `syncgrad-train --model gpt`, in-process on a small generated text: the corpus reader,
// a short run whose loss falls, the progress fields, exact resume from a checkpoint, and the errors.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "syncgrad.h"
#include "tensor/io/safetensors.h"
#include "tests/check_error.h"
#include "tools/train/text_corpus.h"
#include "tools/train/trainer.h"

using namespace syncgrad;
using syncgrad::testing::check_error;
using syncgrad::train::TrainConfig;

namespace {

namespace fs = std::filesystem;

constexpr const char* kTinyGpt = "block_size=16,n_layer=1,n_head=2,n_embd=16";

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("syncgrad-text-task-" + std::to_string(getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write(const std::string& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }

// A few kilobytes of regular text that a tiny model learns quickly.
std::string sample_text() {
  std::string text;
  for (int i = 0; i < 120; ++i) text += "the quick brown fox jumps over the lazy dog " + std::to_string(i % 7) + ".\n";
  return text;
}

TrainConfig tiny_run(const std::string& text_file) {
  TrainConfig c;
  c.model = "gpt";
  c.data_dir = text_file;
  c.model_config = kTinyGpt;
  c.batch_size = 8;
  c.optimizer = syncgrad::train::OptimizerKind::kAdamW;
  c.lr = 1e-2;
  c.lr_schedule = syncgrad::train::LrSchedule::kConstant;
  c.workers = 0;
  c.max_steps = 30;
  c.log_every = 10;
  return c;
}

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("text corpus: a file, or a directory's text files in name order without .dat files and symlinks") {
  TempDir dir;
  fs::create_directories(dir.path / "texts");
  write(dir.file("texts/b"), "second ");
  write(dir.file("texts/a"), "first ");
  write(dir.file("texts/a.dat"), "INDEX");
  write(dir.file("texts/.hidden"), "HIDDEN");
  fs::create_symlink(dir.file("texts/a"), dir.file("texts/a.u8"));
  train::TextCorpus corpus = train::read_text_corpus(dir.file("texts"));
  CHECK(corpus.bytes == "first second ");
  CHECK(corpus.files.size() == 2);
  CHECK(train::read_text_corpus(dir.file("texts/b")).bytes == "second ");
  check_error<IOError>([&] { train::read_text_corpus(dir.file("absent")); },
                       {"absent", "does not exist", "--data-dir"});
  fs::create_directories(dir.path / "empty");
  check_error<IOError>([&] { train::read_text_corpus(dir.file("empty")); }, {"holds no text", "--data-dir"});
}

TEST_CASE("syncgrad-train --model gpt: the loss falls, tokens/s, MFU and validation loss in the progress line") {
  TempDir dir;
  write(dir.file("text"), sample_text());
  TrainConfig c = tiny_run(dir.file("text"));
  c.eval_every = 10;
  c.log_file = dir.file("log.csv");
  std::ostringstream out;
  train::TrainSummary s = train::run_training(c, out);
  INFO(out.str());
  CHECK(s.steps == 30);
  CHECK(out.str().find("GPT vocab_size=256,block_size=16,n_layer=1") != std::string::npos);
  CHECK(out.str().find(" tokens/s ") != std::string::npos);
  CHECK(out.str().find("MFU ") != std::string::npos);
  CHECK(out.str().find("validation loss ") != std::string::npos);
  CHECK(s.evaluation.metric == "validation loss");
  // Uniform predictions over 256 bytes cost ln 256 = 5.55 nats; the tiny model learns the repeated sentence.
  std::ifstream log(c.log_file);
  std::string header, first, last, line;
  std::getline(log, header);
  std::getline(log, first);
  while (std::getline(log, line)) {
    if (line.find(",eval,") == std::string::npos) last = line;  // training rows (evaluations have no loss)
  }
  auto loss_of = [](const std::string& row) {
    std::stringstream fields(row);
    std::string step, epoch, loss;
    std::getline(fields, step, ',');
    std::getline(fields, epoch, ',');
    std::getline(fields, loss, ',');
    return std::stod(loss);
  };
  // Learning, not a figure: the bounds sit far from what any CPU's rounding moves (the log shows the run's own).
  MESSAGE("GPT 30 steps: first logged loss " << loss_of(first) << ", last " << loss_of(last) << ", validation "
                                             << s.evaluation.value);
  CHECK(loss_of(last) < loss_of(first) - 1.0);
  CHECK(s.evaluation.value < 3.0);
}

TEST_CASE("syncgrad-train --model gpt: 15 steps + checkpoint + resume to 30 equals 30 steps") {
  TempDir dir;
  write(dir.file("text"), sample_text());
  TrainConfig straight = tiny_run(dir.file("text"));
  straight.checkpoint_dir = dir.file("straight");
  TrainConfig first = tiny_run(dir.file("text"));
  first.max_steps = 15;
  first.checkpoint_dir = dir.file("resumed");
  TrainConfig second = tiny_run(dir.file("text"));
  second.checkpoint_dir = dir.file("resumed");
  second.resume = dir.file("resumed");
  std::ostringstream out;
  train::run_training(straight, out);
  train::run_training(first, out);
  train::run_training(second, out);
  CHECK(out.str().find("resumed from") != std::string::npos);
  CHECK(read_bytes(dir.file("straight/latest/model.safetensors")) == read_bytes(dir.file("resumed/latest/model.safetensors")));
  // The run config recorded in the checkpoint carries the model sizes (syncgrad-generate reads them).
  const auto metadata = io::load_safetensors(dir.file("resumed/latest/training_state.safetensors")).metadata;
  CHECK(TrainConfig::from_json(metadata.at("config")).model_config == kTinyGpt);
}

TEST_CASE("text task errors: bad --model-config before any data is read, missing or short text, wrong dataset") {
  TempDir dir;
  std::ostringstream out;
  TrainConfig c = tiny_run(dir.file("absent"));
  c.model_config = "n_layers=2";
  check_error<ValueError>([&] { train::run_training(c, out); }, {"unknown key \"n_layers\"", "allowed keys"});
  c.model_config = kTinyGpt;
  check_error<IOError>([&] { train::run_training(c, out); }, {"absent", "does not exist"});
  write(dir.file("short"), std::string(100, 'x'));
  c.data_dir = dir.file("short");
  check_error<ValueError>([&] { train::run_training(c, out); }, {"100 bytes", "block_size + 1 = 17"});
  c.data_dir = "";
  c.dataset = "fashion-mnist";
  check_error<ValueError>([&] { train::run_training(c, out); }, {"--model gpt does not fit --dataset fashion-mnist"});
}
