// What syncgrad-train learns from. A Task owns the data sets, builds the model that fits them, turns a batch
// into a loss and evaluates the model on held-out data; the training loop (trainer.cpp) is the same for all.
// --dataset picks the task (by default the one the --model belongs to):
//   fashion-mnist  mlp, cnn              (1, 28, 28) images, 10 classes, test accuracy
//   cifar10        resnet18, resnet20    (3, 32, 32) images, 10 classes, test accuracy
//   text           gpt                   byte-level language modelling, validation loss
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/collate.h"
#include "data/dataset.h"
#include "nn/module.h"
#include "tensor/generator.h"
#include "tools/train/train_config.h"

namespace syncgrad::train {

struct Evaluation {
  std::string metric;  // "test accuracy" or "validation loss"
  double value = 0;    // accuracy as a fraction in [0, 1], or the mean loss
  std::string text;    // for the summary line, e.g. "test accuracy 87.12%"
};

// One held-out batch's part of the metric: the sum over its examples (correct predictions, or the loss times
// the examples) and their count. Tallies add up over batches (tools/train/evaluation.h sums them, in batch
// order, over the ranks that evaluated them).
struct EvaluationTally {
  double sum = 0;
  int64_t examples = 0;
};

class Task {
 public:
  virtual ~Task();
  // One line for the start of the run, e.g. "60000 images (/usr/share/datasets/fashion-mnist)".
  virtual std::string description() const = 0;
  virtual std::shared_ptr<const data::Dataset> train_data() const = 0;
  // The model --model names, initialised from gen (nullptr: the default generator; DataParallel's replicas).
  virtual std::shared_ptr<nn::Module> make_model(Generator* gen) const = 0;
  // The scalar loss of one batch (collated by the DataLoader from train_data()).
  virtual Tensor loss(nn::Module& model, const data::Batch& batch) const = 0;
  // The held-out split in evaluation_batches() fixed batches (the same on every rank; tools/train/evaluation.h
  // splits them between ranks and puts the model in eval mode without gradients).
  virtual int64_t evaluation_batches() const = 0;
  // The tallies of the held-out batches `which` (ascending), one per batch.
  virtual std::vector<EvaluationTally> evaluate_batches(nn::Module& model, const std::vector<int64_t>& which) const = 0;
  // The metric of the whole held-out split from the sum of every batch's tally.
  virtual Evaluation summarize(const EvaluationTally& total) const = 0;
  // What the throughput counts: "samples" (one per example) or e.g. "tokens" (block_size per example).
  virtual std::string rate_unit() const { return "samples"; }
  virtual int64_t units_per_example() const { return 1; }
};

// The batch's tensors on `device`; from a loader's pinned memory the copies do not block the host.
data::Batch on_device(const data::Batch& batch, Device device);
// Where the model's parameters are (the CPU for a model without any): where its batches must go.
Device device_of(const nn::Module& model);

// The dataset a model trains on by default: "fashion-mnist" for mlp/cnn, "cifar10" for resnet*, "text" for gpt.
std::string default_dataset_for(const std::string& model);
// Every model name syncgrad-train accepts, and the datasets.
std::vector<std::string> trainer_model_names();
std::vector<std::string> trainer_dataset_names();

// The task for config.dataset (or the model's default); ValueError when the model does not fit the dataset
// (naming both and the models that do), IOError when the data is missing (with where to get it).
std::unique_ptr<Task> make_task(const TrainConfig& config);

}  // namespace syncgrad::train
