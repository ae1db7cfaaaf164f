// SyntheticTask: the input shape of each bundled image classifier; models without one are refused by name.
#include "bench/scaling/synthetic_task.h"

#include <algorithm>

#include "autograd/ops/loss.h"
#include "models/models.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::bench {

SyntheticTask::SyntheticTask(const std::string& model) : model_(model) {
  const auto names = models::model_names();
  if (std::find(names.begin(), names.end(), model) == names.end()) {
    models::make_model(model);  // throws the ValueError listing the known models
  }
  if (model == "mlp" || model == "cnn") {
    example_shape_ = {1, 28, 28};
  } else if (model.rfind("resnet", 0) == 0) {
    example_shape_ = {3, 32, 32};
  } else {
    throw ValueError("syncgrad-bench: model \"" + model +
                     "\" has no synthetic input yet; give it an input shape in bench/scaling/synthetic_task.cpp");
  }
  classes_ = 10;
}

std::string SyntheticTask::description() const {
  return "synthetic " + shape_str(example_shape_) + " f32 images, " + std::to_string(classes_) + " classes";
}

std::shared_ptr<const data::Dataset> SyntheticTask::make_dataset(int64_t examples, Generator& gen) const {
  Shape shape{examples};
  shape.insert(shape.end(), example_shape_.begin(), example_shape_.end());
  Tensor images = randn(shape, {}, &gen);                                         // (N, C, H, W)
  Tensor labels = randint(0, classes_, {examples}, {.dtype = DType::i64}, &gen);  // (N)
  return std::make_shared<data::TensorDataset>(images, labels);
}

Tensor SyntheticTask::loss(const Tensor& output, const Tensor& target) const { return cross_entropy(output, target); }

double SyntheticTask::input_bytes_per_example() const {
  double n = 4;
  for (int64_t d : example_shape_) n *= static_cast<double>(d);
  return n;
}

double SyntheticTask::output_bytes_per_example() const { return 4.0 * static_cast<double>(classes_); }

}  // namespace syncgrad::bench
