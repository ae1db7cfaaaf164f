// Transforms as plain loops over contiguous f32 (C, H, W) images.
#include "data/transforms.h"

#include <string>
#include <utility>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::data {
namespace {

// The image as a contiguous (C, H, W) f32 tensor; errors name the transform.
Tensor checked_image(const Tensor& image, const char* who) {
  SYNCGRAD_CHECK(image.defined() && image.dim() == 3, ShapeError, who, ": expected a (C, H, W) image, got shape ",
                 (image.defined() ? shape_str(image.sizes()) : std::string("<undefined>")));
  SYNCGRAD_CHECK(image.dtype() == DType::f32, DTypeError, who, ": expected a float32 image, got ",
                 dtype_name(image.dtype()));
  SYNCGRAD_CHECK(image.device().is_cpu(), DeviceError, who, ": expected a CPU image, got ", image.device().str());
  return raw::contiguous(image);
}

}  // namespace

Transform::~Transform() = default;

Normalize::Normalize(std::vector<float> mean, std::vector<float> std) : mean_(std::move(mean)), std_(std::move(std)) {
  SYNCGRAD_CHECK(!mean_.empty() && mean_.size() == std_.size(), ValueError, "Normalize: mean has ", mean_.size(),
                 " values and std ", std_.size(), "; give one of each per channel");
  for (size_t c = 0; c < std_.size(); ++c) {
    SYNCGRAD_CHECK(std_[c] > 0, ValueError, "Normalize: std[", c, "] is ", std::to_string(std_[c]), ", must be > 0");
  }
}

Tensor Normalize::operator()(const Tensor& image, Generator&) const {
  Tensor in = checked_image(image, "Normalize");
  const int64_t channels = in.size(0), plane = in.size(1) * in.size(2);
  SYNCGRAD_CHECK(channels == static_cast<int64_t>(mean_.size()), ShapeError, "Normalize: image ", shape_str(in.sizes()),
                 " has ", channels, " channels but mean/std have ", mean_.size());
  Tensor out = empty(in.sizes());  // (C, H, W)
  const float* src = in.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  for (int64_t c = 0; c < channels; ++c) {
    const float scale = 1.0f / std_[c], shift = -mean_[c] / std_[c];
    for (int64_t i = c * plane; i < (c + 1) * plane; ++i) dst[i] = src[i] * scale + shift;
  }
  return out;
}

RandomCrop::RandomCrop(int64_t size, int64_t padding) : size_(size), padding_(padding) {
  SYNCGRAD_CHECK(size >= 1, ValueError, "RandomCrop: size must be >= 1, got ", size);
  SYNCGRAD_CHECK(padding >= 0, ValueError, "RandomCrop: padding must be >= 0, got ", padding);
}

Tensor RandomCrop::operator()(const Tensor& image, Generator& gen) const {
  Tensor in = checked_image(image, "RandomCrop");
  const int64_t channels = in.size(0), height = in.size(1), width = in.size(2);
  const int64_t padded_h = height + 2 * padding_, padded_w = width + 2 * padding_;
  SYNCGRAD_CHECK(padded_h >= size_ && padded_w >= size_, ShapeError, "RandomCrop: image ", shape_str(in.sizes()),
                 " padded by ", padding_, " is smaller than the crop size ", size_);
  // Top-left corner of the crop in padded coordinates.
  const int64_t top = static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(padded_h - size_ + 1)));
  const int64_t left = static_cast<int64_t>(gen.next_below(static_cast<uint64_t>(padded_w - size_ + 1)));
  Tensor out = empty({channels, size_, size_});  // (C, size, size)
  const float* src = in.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t y = 0; y < size_; ++y) {
      const int64_t sy = top + y - padding_;
      float* row = dst + (c * size_ + y) * size_;
      for (int64_t x = 0; x < size_; ++x) {
        const int64_t sx = left + x - padding_;
        const bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
        row[x] = inside ? src[(c * height + sy) * width + sx] : 0.0f;
      }
    }
  }
  return out;
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  SYNCGRAD_CHECK(p >= 0.0 && p <= 1.0, ValueError, "RandomHorizontalFlip: p must be in [0, 1], got ",
                 std::to_string(p));
}

Tensor RandomHorizontalFlip::operator()(const Tensor& image, Generator& gen) const {
  Tensor in = checked_image(image, "RandomHorizontalFlip");
  const bool flip = gen.next_double() < p_;
  if (!flip) return raw::clone(in);
  const int64_t rows = in.size(0) * in.size(1), width = in.size(2);
  Tensor out = empty(in.sizes());  // (C, H, W)
  const float* src = in.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t x = 0; x < width; ++x) dst[r * width + x] = src[r * width + (width - 1 - x)];
  }
  return out;
}

Compose::Compose(std::vector<std::shared_ptr<const Transform>> transforms) : transforms_(std::move(transforms)) {
  for (size_t i = 0; i < transforms_.size(); ++i) {
    SYNCGRAD_CHECK(transforms_[i], ValueError, "Compose: transform ", i, " is null");
  }
}

Tensor Compose::operator()(const Tensor& image, Generator& gen) const {
  Tensor out = image;
  for (const auto& t : transforms_) out = (*t)(out, gen);
  return out;
}

TransformDataset::TransformDataset(std::shared_ptr<const Dataset> base, std::shared_ptr<const Transform> transform)
    : base_(std::move(base)), transform_(std::move(transform)) {
  SYNCGRAD_CHECK(base_, ValueError, "TransformDataset: base dataset must not be null");
  SYNCGRAD_CHECK(transform_, ValueError, "TransformDataset: transform must not be null");
}

Example TransformDataset::get(int64_t index) const {
  Generator gen = Generator(0).split(static_cast<uint64_t>(index));
  return fetch(index, gen);
}

Example TransformDataset::fetch(int64_t index, Generator& gen) const {
  Example e = base_->fetch(index, gen);
  e.data = (*transform_)(e.data, gen);
  return e;
}

}  // namespace syncgrad::data
