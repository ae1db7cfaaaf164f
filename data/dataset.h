// Datasets: a size and random access to (data, target) examples. TensorDataset slices two tensors along their
// first dimension; MnistDataset serves one Fashion-MNIST split as (1, 28, 28) f32 images and 0-dim i64 labels.
#pragma once

#include <cstdint>
#include <string>

#include "data/fashion_mnist.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace syncgrad::data {

struct Example {
  Tensor data;
  Tensor target;
};

class Dataset {
 public:
  virtual ~Dataset();
  virtual int64_t size() const = 0;
  // Throws IndexError naming the index and the size when index is outside [0, size()).
  virtual Example get(int64_t index) const = 0;
  // What a DataLoader calls: the example with any random transform drawn from `gen` (the loader derives it
  // from its seed, the epoch and the index, so results never depend on workers). The default is get(index).
  virtual Example fetch(int64_t index, Generator& gen) const;

 protected:
  void check_index(int64_t index) const;
};

// Example i is (data[i], targets[i]) as views sharing the tensors' storage.
class TensorDataset : public Dataset {
 public:
  // ShapeError naming both shapes unless both have at least one dim and the same first dim.
  TensorDataset(Tensor data, Tensor targets);
  int64_t size() const override;
  Example get(int64_t index) const override;

 private:
  Tensor data_;
  Tensor targets_;
};

// One split of load_fashion_mnist(dir, train), held in memory.
class MnistDataset : public Dataset {
 public:
  explicit MnistDataset(const std::string& dir, bool train = true);
  int64_t size() const override;
  Example get(int64_t index) const override;

 private:
  MnistSplit split_;
};

}  // namespace syncgrad::data
