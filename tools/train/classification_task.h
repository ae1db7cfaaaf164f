// Image classification: cross-entropy on (B, C, H, W) images and (B) labels, test accuracy on a held-out
// split. Fashion-MNIST (mlp, cnn) and CIFAR-10 (resnet18, resnet20) are both this task with their own data.
#pragma once

#include <functional>

#include "tools/train/task.h"

namespace syncgrad::train {

class ClassificationTask : public Task {
 public:
  using ModelFactory = std::function<std::shared_ptr<nn::Module>(Generator*)>;
  ClassificationTask(std::string description, std::shared_ptr<const data::Dataset> train,
                     std::shared_ptr<const data::Dataset> test, ModelFactory make_model);

  std::string description() const override { return description_; }
  std::shared_ptr<const data::Dataset> train_data() const override { return train_; }
  std::shared_ptr<nn::Module> make_model(Generator* gen) const override { return make_model_(gen); }
  Tensor loss(nn::Module& model, const data::Batch& batch) const override;
  // Batches of kEvaluationBatch test images in file order; the tally counts the correct predictions.
  int64_t evaluation_batches() const override;
  std::vector<EvaluationTally> evaluate_batches(nn::Module& model, const std::vector<int64_t>& which) const override;
  Evaluation summarize(const EvaluationTally& total) const override;

  static constexpr int64_t kEvaluationBatch = 1000;

 private:
  std::string description_;
  std::shared_ptr<const data::Dataset> train_;
  std::shared_ptr<const data::Dataset> test_;
  ModelFactory make_model_;
};

// Fashion-MNIST from config.data_dir (default data::default_fashion_mnist_dir()), normalised with mean
// 0.2860, std 0.3530; models mlp and cnn.
std::unique_ptr<Task> make_fashion_mnist_task(const TrainConfig& config);

// CIFAR-10 binary batches from config.data_dir (the cifar-10-batches-bin directory, default
// $SYNCGRAD_CIFAR10_DIR), per-channel normalisation, and for training a random 32x32 crop of the image padded
// by 4 and a horizontal flip with probability 0.5; models resnet18 and resnet20.
std::unique_ptr<Task> make_cifar10_task(const TrainConfig& config);

}  // namespace syncgrad::train
