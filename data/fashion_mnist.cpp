// load_fashion_mnist: finds the split's two IDX files, checks them against each other, normalises the pixels
// into f32 (N, 1, 28, 28) and widens the labels to i64.
#include "data/fashion_mnist.h"

#include <sys/stat.h>

#include <cstdlib>

#include "data/idx.h"
#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/ops/factories.h"

namespace syncgrad::data {

namespace {

constexpr int64_t kImageSide = 28;
constexpr int64_t kNumClasses = 10;

bool is_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// dir/name.gz, else dir/name; IOError naming both candidates when neither exists.
std::string find_split_file(const std::string& dir, const std::string& name) {
  std::string base = dir + "/" + name;
  if (is_file(base + ".gz")) return base + ".gz";
  if (is_file(base)) return base;
  throw IOError("load_fashion_mnist: neither '" + base + ".gz' nor '" + base + "' exists (install Debian's " +
                "dataset-fashion-mnist or pass --data-dir DIR)");
}

// f32 (N, 1, 28, 28) = (x / 255 - mean) / std for u8 (N, 28, 28).
Tensor normalise(const Tensor& pixels, double mean, double std) {
  const int64_t n = pixels.size(0);
  Tensor out = empty({n, 1, kImageSide, kImageSide});
  const float scale = static_cast<float>(1.0 / (255.0 * std));
  const float shift = static_cast<float>(-mean / std);
  const auto* in = pixels.data_ptr<uint8_t>();
  float* dst = out.data_ptr<float>();
  const int64_t count = pixels.numel();
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<float>(in[i]) * scale + shift;
  return out;
}

// i64 (N) from u8 (N), checking every label is a class index.
Tensor widen_labels(const Tensor& raw_labels, const std::string& path) {
  const int64_t n = raw_labels.numel();
  Tensor out = empty({n}, {.dtype = DType::i64});
  const auto* in = raw_labels.data_ptr<uint8_t>();
  int64_t* dst = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    SYNCGRAD_CHECK(in[i] < kNumClasses, ValueError, "load_fashion_mnist '", path, "': label ", i, " is ",
                   std::to_string(in[i]), ", expected a class index below ", kNumClasses);
    dst[i] = in[i];
  }
  return out;
}

}  // namespace

std::string default_fashion_mnist_dir() {
  const char* from_env = std::getenv("SYNCGRAD_DATA_DIR");
  if (from_env != nullptr && from_env[0] != '\0') return from_env;
  return "/usr/share/datasets/fashion-mnist";
}

MnistSplit load_fashion_mnist(const std::string& dir, bool train, double mean, double std) {
  SYNCGRAD_CHECK(std > 0.0, ValueError, "load_fashion_mnist: std must be positive, got ", std::to_string(std));
  const std::string prefix = train ? "train" : "t10k";
  std::string images_path = find_split_file(dir, prefix + "-images-idx3-ubyte");
  std::string labels_path = find_split_file(dir, prefix + "-labels-idx1-ubyte");

  Tensor pixels = read_idx_images(images_path);  // u8 (N, rows, cols)
  SYNCGRAD_CHECK(pixels.size(0) > 0, ValueError, "load_fashion_mnist '", images_path, "' holds 0 images: there is ",
                 "nothing to ", train ? "train" : "test", " on (a damaged or placeholder file?); pass --data-dir with "
                 "the Fashion-MNIST files");
  SYNCGRAD_CHECK(pixels.size(1) == kImageSide && pixels.size(2) == kImageSide, ValueError, "load_fashion_mnist '",
                 images_path, "': images are ", pixels.size(1), "x", pixels.size(2), ", expected 28x28");
  Tensor raw_labels = read_idx_labels(labels_path);  // u8 (N)
  SYNCGRAD_CHECK(raw_labels.size(0) == pixels.size(0), ValueError, "load_fashion_mnist: image/label count mismatch: '",
                 images_path, "' has ", pixels.size(0), " images but '", labels_path, "' has ", raw_labels.size(0),
                 " labels");
  return MnistSplit{normalise(pixels, mean, std), widen_labels(raw_labels, labels_path)};
}

}  // namespace syncgrad::data
