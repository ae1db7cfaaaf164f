// Image transforms for (C, H, W) f32 examples, composed per dataset: Normalize (per-channel mean/std),
// RandomCrop (zero padding, then a crop at a random offset), RandomHorizontalFlip and Compose. Random choices
// come from the Generator passed in (in a DataLoader: the sample's generator, data/worker_info.h), never from
// std:: distributions, so they are identical on every machine and for any number of workers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/dataset.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace syncgrad::data {

class Transform {
 public:
  virtual ~Transform();
  // image: (C, H, W) f32 on the CPU; returns a new tensor (C, H', W'). ShapeError/DTypeError otherwise.
  virtual Tensor operator()(const Tensor& image, Generator& gen) const = 0;
};

// out[c] = (x[c] - mean[c]) / std[c]; ValueError unless mean and std have the same non-zero length and every
// std > 0; ShapeError when the image's channel count differs.
class Normalize : public Transform {
 public:
  Normalize(std::vector<float> mean, std::vector<float> std);
  Tensor operator()(const Tensor& image, Generator& gen) const override;

 private:
  std::vector<float> mean_;
  std::vector<float> std_;
};

// Pads every side with `padding` zeros, then crops size x size at offsets drawn uniformly from the valid
// range (vertical first, then horizontal). ValueError for size < 1 or padding < 0; ShapeError when the padded
// image is smaller than size.
class RandomCrop : public Transform {
 public:
  explicit RandomCrop(int64_t size, int64_t padding = 0);
  Tensor operator()(const Tensor& image, Generator& gen) const override;

 private:
  int64_t size_;
  int64_t padding_;
};

// Mirrors the image left-right with probability p (one draw per image). ValueError unless 0 <= p <= 1.
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor operator()(const Tensor& image, Generator& gen) const override;

 private:
  double p_;
};

// Applies the transforms in order with the same generator.
class Compose : public Transform {
 public:
  explicit Compose(std::vector<std::shared_ptr<const Transform>> transforms);
  Tensor operator()(const Tensor& image, Generator& gen) const override;

 private:
  std::vector<std::shared_ptr<const Transform>> transforms_;
};

// A dataset whose example data goes through `transform`; fetch(i, gen) draws from gen, get(i) from
// Generator(0).split(i) (deterministic outside a loader).
class TransformDataset : public Dataset {
 public:
  TransformDataset(std::shared_ptr<const Dataset> base, std::shared_ptr<const Transform> transform);
  int64_t size() const override { return base_->size(); }
  Example get(int64_t index) const override;
  Example fetch(int64_t index, Generator& gen) const override;

 private:
  std::shared_ptr<const Dataset> base_;
  std::shared_ptr<const Transform> transform_;
};

}  // namespace syncgrad::data
