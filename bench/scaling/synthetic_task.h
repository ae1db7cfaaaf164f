// SyntheticTask: what the scaling bench feeds a model -- random examples of the model's input shape in a
// TensorDataset (read through a real DataLoader, so data-wait is measured) and the model's loss.
#pragma once

#include <memory>
#include <string>

#include "data/dataset.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace syncgrad::bench {

class SyntheticTask {
 public:
  // ValueError when make_model does not know `model`, or when the bench has no input shape for it.
  explicit SyntheticTask(const std::string& model);

  const std::string& model() const { return model_; }
  // e.g. "synthetic (1, 28, 28) f32 images, 10 classes"
  std::string description() const;
  // `examples` random examples drawn from `gen`.
  std::shared_ptr<const data::Dataset> make_dataset(int64_t examples, Generator& gen) const;
  // output (B, classes), target (B) i64 -> scalar loss
  Tensor loss(const Tensor& output, const Tensor& target) const;
  // Bytes of one example's input and of one example's model output.
  double input_bytes_per_example() const;
  double output_bytes_per_example() const;

 private:
  std::string model_;
  Shape example_shape_;
  int64_t classes_ = 0;
};

}  // namespace syncgrad::bench
