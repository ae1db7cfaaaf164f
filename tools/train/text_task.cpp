// The text task: byte tokens, next-byte windows, cross-entropy loss, validation loss.
#include "tools/train/text_task.h"

#include <algorithm>
#include <cstdio>

#include "models/gpt.h"
#include "syncgrad.h"
#include "tensor/check.h"
#include "tools/train/text_corpus.h"

namespace syncgrad::train {
namespace {

constexpr double kTrainFraction = 0.9;
constexpr int64_t kEvalBatch = 32;

// Windows of block + 1 tokens starting at multiples of block: data (block + 1) i64; the target is the
// window's start position (0-dim i64), so that a batch counts B examples (B x block tokens).
class NextTokenWindows : public data::Dataset {
 public:
  NextTokenWindows(Tensor tokens, int64_t block)
      : tokens_(std::move(tokens)), block_(block), size_((tokens_.numel() - 1) / block) {}
  int64_t size() const override { return size_; }
  data::Example get(int64_t index) const override {
    check_index(index);
    return {raw::narrow(tokens_, 0, index * block_, block_ + 1), scalar_tensor(index * block_, {.dtype = DType::i64})};
  }

 private:
  Tensor tokens_;  // (N) i64
  int64_t block_;
  int64_t size_;
};

// Mean next-token cross-entropy of token windows (B, block + 1): the model reads the first block tokens.
Tensor next_token_loss(nn::Module& model, const Tensor& windows) {
  const int64_t block = windows.size(1) - 1;
  Tensor input = raw::contiguous(raw::narrow(windows, 1, 0, block));      // (B, T)
  Tensor target = raw::reshape(raw::narrow(windows, 1, 1, block), {-1});  // (B * T)
  Tensor logits = model.forward(input);                                   // (B, T, V)
  return cross_entropy(reshape(logits, {-1, logits.size(-1)}), target);
}

std::string thousands(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

class TextTask : public Task {
 public:
  TextTask(const TrainConfig& c, models::GPTConfig model_config)
      : model_config_(model_config), path_(c.data_dir.empty() ? kDefaultTextPath : c.data_dir) {
    const TextCorpus corpus = read_text_corpus(path_);
    const auto n = static_cast<int64_t>(corpus.bytes.size());
    const int64_t train_tokens = static_cast<int64_t>(kTrainFraction * static_cast<double>(n));
    const int64_t block = model_config_.block_size;
    SYNCGRAD_CHECK(train_tokens >= block + 1 && n - train_tokens >= block + 1, ValueError, "--dataset text: \"", path_,
                   "\" holds ", n,
                   " bytes; the 90%/10% train/validation split needs at least block_size + 1 = ", block + 1,
                   " in each part (use more text or a smaller block_size in --model-config)");
    Tensor tokens = empty({n}, {.dtype = DType::i64});  // (N)
    int64_t* dst = tokens.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<unsigned char>(corpus.bytes[static_cast<size_t>(i)]);
    train_ = std::make_shared<NextTokenWindows>(raw::narrow(tokens, 0, 0, train_tokens), block);
    validation_ = raw::narrow(tokens, 0, train_tokens, n - train_tokens);
    Generator probe_gen(0);  // counting only: leaves the process generator alone
    models::GPT probe(model_config_, &probe_gen);
    char text[400];
    std::snprintf(text, sizeof text,
                  "%s bytes from %zu file(s) in %s (%s train / %s validation tokens); GPT %s, %.2fM parameters, "
                  "%.1f MFLOP/token",
                  thousands(n).c_str(), corpus.files.size(), path_.c_str(), thousands(train_tokens).c_str(),
                  thousands(n - train_tokens).c_str(), model_config_.to_string().c_str(),
                  static_cast<double>(probe.num_parameters()) / 1e6, probe.flops_per_token() / 1e6);
    description_ = text;
  }

  std::string description() const override { return description_; }
  std::shared_ptr<const data::Dataset> train_data() const override { return train_; }
  std::shared_ptr<nn::Module> make_model(Generator* gen) const override {
    return std::make_shared<models::GPT>(model_config_, gen);
  }
  Tensor loss(nn::Module& model, const data::Batch& batch) const override { return next_token_loss(model, batch.data); }

  // kEvalBatch windows per batch, evenly spaced over the validation text (the same ones every time); the tally
  // is the batch's mean loss times its windows.
  int64_t evaluation_batches() const override { return (evaluation_windows() + kEvalBatch - 1) / kEvalBatch; }

  std::vector<EvaluationTally> evaluate_batches(nn::Module& model, const std::vector<int64_t>& which) const override {
    const int64_t block = model_config_.block_size;
    const int64_t available = (validation_.numel() - 1) / block;
    const int64_t count = evaluation_windows();
    std::vector<EvaluationTally> tallies;
    for (int64_t b : which) {
      std::vector<Tensor> windows;
      for (int64_t i = b * kEvalBatch; i < std::min(count, (b + 1) * kEvalBatch); ++i) {
        windows.push_back(raw::narrow(validation_, 0, i * available / count * block, block + 1));
      }
      const Tensor batch = raw::stack(windows).to(device_of(model));  // (B, block + 1)
      const auto size = static_cast<int64_t>(windows.size());
      tallies.push_back({next_token_loss(model, batch).item<double>() * static_cast<double>(size), size});
    }
    return tallies;
  }

  Evaluation summarize(const EvaluationTally& total) const override {
    const double mean = total.sum / static_cast<double>(std::max<int64_t>(1, total.examples));
    char text[64];
    std::snprintf(text, sizeof text, "validation loss %.4f", mean);
    return {"validation loss", mean, text};
  }

  std::string rate_unit() const override { return "tokens"; }
  int64_t units_per_example() const override { return model_config_.block_size; }

 private:
  // About kEvalTokens tokens' worth of validation windows (at least one).
  int64_t evaluation_windows() const {
    const int64_t block = model_config_.block_size;
    return std::clamp<int64_t>(kEvalTokens / block, 1, (validation_.numel() - 1) / block);
  }

  models::GPTConfig model_config_;
  std::string path_;
  std::string description_;
  std::shared_ptr<const data::Dataset> train_;
  Tensor validation_;  // (N_val) i64
};

}  // namespace

std::unique_ptr<Task> make_text_task(const TrainConfig& c) {
  return std::make_unique<TextTask>(c, models::GPTConfig::parse(c.model_config));
}

}  // namespace syncgrad::train
