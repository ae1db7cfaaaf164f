// ClassificationTask and the two image data sets behind it (Fashion-MNIST, CIFAR-10).
#include "tools/train/classification_task.h"

#include <algorithm>
#include <cstdlib>

#include "data/cifar10.h"
#include "data/fashion_mnist.h"
#include "data/loader.h"
#include "data/transforms.h"
#include "models/models.h"
#include "syncgrad.h"
#include "tensor/check.h"

namespace syncgrad::train {

ClassificationTask::ClassificationTask(std::string description, std::shared_ptr<const data::Dataset> train,
                                       std::shared_ptr<const data::Dataset> test, ModelFactory make_model)
    : description_(std::move(description)),
      train_(std::move(train)),
      test_(std::move(test)),
      make_model_(std::move(make_model)) {}

Tensor ClassificationTask::loss(nn::Module& model, const data::Batch& batch) const {
  return cross_entropy(model.forward(batch.data), batch.target);  // data (B, C, H, W), target (B)
}

namespace {

// The given indices, in order: the examples of the evaluated batches.
class IndexSampler : public data::Sampler {
 public:
  explicit IndexSampler(std::vector<int64_t> indices) : indices_(std::move(indices)) {}
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  std::vector<int64_t> indices() const override { return indices_; }

 private:
  std::vector<int64_t> indices_;
};

}  // namespace

int64_t ClassificationTask::evaluation_batches() const {
  return (test_->size() + kEvaluationBatch - 1) / kEvaluationBatch;
}

// The loader cuts the selected batches' examples back into the same batches: every selected batch is full but
// the last one of the test set, which can only come last.
std::vector<EvaluationTally> ClassificationTask::evaluate_batches(nn::Module& model,
                                                                  const std::vector<int64_t>& which) const {
  std::vector<int64_t> indices;
  for (int64_t b : which) {
    for (int64_t i = b * kEvaluationBatch; i < std::min(test_->size(), (b + 1) * kEvaluationBatch); ++i) {
      indices.push_back(i);
    }
  }
  std::vector<EvaluationTally> tallies;
  if (indices.empty()) return tallies;
  const Device device = device_of(model);
  data::DataLoader loader(test_, {.batch_size = kEvaluationBatch,
                                  .sampler = std::make_shared<IndexSampler>(std::move(indices))});
  for (const data::Batch& host_batch : loader) {
    const data::Batch batch = on_device(host_batch, device);
    Tensor predicted = argmax(model.forward(batch.data), 1);  // (B)
    tallies.push_back({static_cast<double>(raw::sum(eq(predicted, batch.target)).item<int64_t>()), batch.data.size(0)});
  }
  return tallies;
}

Evaluation ClassificationTask::summarize(const EvaluationTally& total) const {
  const double accuracy = total.sum / static_cast<double>(std::max<int64_t>(1, total.examples));
  char text[64];
  std::snprintf(text, sizeof text, "test accuracy %.2f%%", 100.0 * accuracy);
  return {"test accuracy", accuracy, text};
}

namespace {

ClassificationTask::ModelFactory named_model(const std::string& name) {
  return [name](Generator* gen) { return models::make_model(name, gen); };
}

}  // namespace

std::unique_ptr<Task> make_fashion_mnist_task(const TrainConfig& c) {
  const std::string dir = c.data_dir.empty() ? data::default_fashion_mnist_dir() : c.data_dir;
  data::MnistSplit train = data::load_fashion_mnist(dir, true);
  data::MnistSplit test = data::load_fashion_mnist(dir, false);
  const std::string description = std::to_string(train.labels.numel()) + " images (" + dir + ")";
  return std::make_unique<ClassificationTask>(
      description, std::make_shared<data::TensorDataset>(train.images, train.labels),
      std::make_shared<data::TensorDataset>(test.images, test.labels), named_model(c.model));
}

std::unique_ptr<Task> make_cifar10_task(const TrainConfig& c) {
  std::string dir = c.data_dir;
  if (dir.empty()) {
    const char* env = std::getenv("SYNCGRAD_CIFAR10_DIR");
    SYNCGRAD_CHECK(
        env != nullptr && *env != '\0', IOError,
        "--dataset cifar10 needs the CIFAR-10 binary version: download cifar-10-binary.tar.gz from "
        "https://www.cs.toronto.edu/~kriz/cifar.html, unpack it and pass --data-dir .../cifar-10-batches-bin (the "
        "directory with data_batch_1.bin .. data_batch_5.bin and test_batch.bin), or set SYNCGRAD_CIFAR10_DIR");
    dir = env;
  }
  // The per-channel mean and standard deviation of the CIFAR-10 training images (pixels scaled to [0, 1]).
  auto normalize = std::make_shared<data::Normalize>(std::vector<float>{0.4914f, 0.4822f, 0.4465f},
                                                     std::vector<float>{0.2470f, 0.2435f, 0.2616f});
  auto augment = std::make_shared<data::Compose>(std::vector<std::shared_ptr<const data::Transform>>{
      std::make_shared<data::RandomCrop>(32, 4), std::make_shared<data::RandomHorizontalFlip>(0.5), normalize});
  auto train = std::make_shared<data::Cifar10Dataset>(dir, true);
  auto test = std::make_shared<data::Cifar10Dataset>(dir, false);
  const std::string description = std::to_string(train->size()) + " images (" + dir + ")";
  return std::make_unique<ClassificationTask>(description, std::make_shared<data::TransformDataset>(train, augment),
                                              std::make_shared<data::TransformDataset>(test, normalize),
                                              named_model(c.model));
}

}  // namespace syncgrad::train
