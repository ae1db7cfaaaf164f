// The task table: which data set each model trains on, and make_task.
#include "tools/train/task.h"

#include <algorithm>

#include "models/models.h"
#include "tensor/check.h"
#include "tensor/errors.h"
#include "tools/train/classification_task.h"
#include "tools/train/text_task.h"

namespace syncgrad::train {

Task::~Task() = default;

data::Batch on_device(const data::Batch& batch, Device device) {
  return {batch.data.to(device, true), batch.target.to(device, true)};
}

Device device_of(const nn::Module& model) {
  const std::vector<Tensor> params = model.parameters();
  return params.empty() ? kCPU : params[0].device();
}

namespace {

struct DatasetEntry {
  std::string name;
  std::vector<std::string> models;
  std::unique_ptr<Task> (*make)(const TrainConfig&);
};

const std::vector<DatasetEntry>& dataset_table() {
  static const std::vector<DatasetEntry> table = {
      {"fashion-mnist", {"mlp", "cnn"}, make_fashion_mnist_task},
      {"cifar10", {"resnet18", "resnet20"}, make_cifar10_task},
      {"text", {"gpt"}, make_text_task},
  };
  return table;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

}  // namespace

std::string default_dataset_for(const std::string& model) {
  for (const DatasetEntry& entry : dataset_table()) {
    if (std::find(entry.models.begin(), entry.models.end(), model) != entry.models.end()) return entry.name;
  }
  throw ValueError("--model: unknown model \"" + model + "\"; known models: " + joined(trainer_model_names()));
}

std::vector<std::string> trainer_model_names() {
  std::vector<std::string> names;
  for (const DatasetEntry& entry : dataset_table()) names.insert(names.end(), entry.models.begin(), entry.models.end());
  return names;
}

std::vector<std::string> trainer_dataset_names() {
  std::vector<std::string> names;
  for (const DatasetEntry& entry : dataset_table()) names.push_back(entry.name);
  return names;
}

std::unique_ptr<Task> make_task(const TrainConfig& c) {
  const std::string dataset = c.dataset.empty() ? default_dataset_for(c.model) : c.dataset;
  for (const DatasetEntry& entry : dataset_table()) {
    if (entry.name != dataset) continue;
    SYNCGRAD_CHECK(std::find(entry.models.begin(), entry.models.end(), c.model) != entry.models.end(), ValueError,
                   "--model ", c.model, " does not fit --dataset ", dataset, "; models for ", dataset, ": ",
                   joined(entry.models), " (or leave --dataset out: ", c.model, " trains on ",
                   default_dataset_for(c.model), ")");
    return entry.make(c);
  }
  throw ValueError("--dataset: unknown dataset \"" + dataset + "\"; known: " + joined(trainer_dataset_names()));
}

}  // namespace syncgrad::train
