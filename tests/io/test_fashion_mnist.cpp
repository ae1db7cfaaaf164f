// Fashion-MNIST loading: a hand-built directory (normalisation, label widening, raw vs gzipped names, each
// error), the data-directory default, and the real Debian dataset when it is installed.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "syncgrad.h"
#include "tests/io/idx_test_files.h"

using namespace syncgrad;
using syncgrad::testing::Bytes;
using syncgrad::testing::contains;
using syncgrad::testing::idx_bytes;
using syncgrad::testing::message_of;
using syncgrad::testing::TempDir;

namespace {

constexpr uint32_t kSide = 28;

// Three 28x28 images: all 0, all 255, and a ramp i % 256.
Bytes three_images() {
  Bytes pixels(3 * kSide * kSide, 0);
  for (size_t i = 0; i < kSide * kSide; ++i) {
    pixels[kSide * kSide + i] = 255;
    pixels[2 * kSide * kSide + i] = static_cast<uint8_t>(i % 256);
  }
  return pixels;
}

void write_split(const TempDir& dir, const std::string& prefix, const Bytes& images, uint32_t n_images,
                 const Bytes& labels, bool gzipped) {
  Bytes image_file = idx_bytes(0x00000803, {n_images, kSide, kSide}, images);
  Bytes label_file = idx_bytes(0x00000801, {static_cast<uint32_t>(labels.size())}, labels);
  if (gzipped) {
    syncgrad::testing::write_gzipped(dir.file(prefix + "-images-idx3-ubyte.gz"), image_file);
    syncgrad::testing::write_gzipped(dir.file(prefix + "-labels-idx1-ubyte.gz"), label_file);
  } else {
    syncgrad::testing::write_bytes(dir.file(prefix + "-images-idx3-ubyte"), image_file);
    syncgrad::testing::write_bytes(dir.file(prefix + "-labels-idx1-ubyte"), label_file);
  }
}

std::string dir_of(const TempDir& dir) { return std::filesystem::path(dir.file("x")).parent_path().string(); }

}  // namespace

TEST_CASE("load_fashion_mnist normalises pixels to f32 (N, 1, 28, 28) and widens labels to i64") {
  TempDir dir;
  write_split(dir, "train", three_images(), 3, {9, 0, 4}, true);
  write_split(dir, "t10k", three_images(), 3, {1, 2, 3}, false);

  data::MnistSplit train = data::load_fashion_mnist(dir_of(dir), true, 0.5, 0.25);
  CHECK(train.images.sizes() == Shape{3, 1, 28, 28});
  CHECK(train.images.dtype() == DType::f32);
  CHECK(train.labels.dtype() == DType::i64);
  CHECK(to_vector<int64_t>(train.labels) == std::vector<int64_t>{9, 0, 4});
  std::vector<float> pixels = to_vector<float>(train.images);
  CHECK(pixels[0] == doctest::Approx(-2.0));             // (0 - 0.5) / 0.25
  CHECK(pixels[kSide * kSide] == doctest::Approx(2.0));  // (1 - 0.5) / 0.25
  CHECK(pixels[2 * kSide * kSide + 51] == doctest::Approx((51.0 / 255 - 0.5) / 0.25).epsilon(1e-6));

  data::MnistSplit test = data::load_fashion_mnist(dir_of(dir), false);  // raw files, default mean/std
  CHECK(to_vector<int64_t>(test.labels) == std::vector<int64_t>{1, 2, 3});
  CHECK(to_vector<float>(test.images)[0] == doctest::Approx(-0.2860 / 0.3530).epsilon(1e-6));
}

TEST_CASE("load_fashion_mnist errors: missing files with the hint, count mismatch, bad label, wrong size") {
  TempDir dir;
  std::string message = message_of<IOError>([&] { data::load_fashion_mnist(dir_of(dir), true); });
  CAPTURE(message);
  CHECK(contains(message, dir.file("train-images-idx3-ubyte.gz")));
  CHECK(contains(message, dir.file("train-images-idx3-ubyte'")));
  CHECK(contains(message, "install Debian's dataset-fashion-mnist or pass --data-dir DIR"));

  write_split(dir, "train", three_images(), 3, {1, 2}, true);
  message = message_of<ValueError>([&] { data::load_fashion_mnist(dir_of(dir), true); });
  CHECK(contains(message, "image/label count mismatch"));
  CHECK(contains(message, "has 3 images but"));
  CHECK(contains(message, "has 2 labels"));

  write_split(dir, "train", three_images(), 3, {1, 10, 2}, true);
  message = message_of<ValueError>([&] { data::load_fashion_mnist(dir_of(dir), true); });
  CHECK(contains(message, dir.file("train-labels-idx1-ubyte.gz")));
  CHECK(contains(message, "label 1 is 10, expected a class index below 10"));

  syncgrad::testing::write_gzipped(dir.file("t10k-images-idx3-ubyte.gz"),
                                   idx_bytes(0x00000803, {1, 2, 2}, {0, 1, 2, 3}));
  syncgrad::testing::write_gzipped(dir.file("t10k-labels-idx1-ubyte.gz"), idx_bytes(0x00000801, {1}, {0}));
  CHECK(contains(message_of<ValueError>([&] { data::load_fashion_mnist(dir_of(dir), false); }),
                 "images are 2x2, expected 28x28"));
  CHECK(contains(message_of<ValueError>([&] { data::load_fashion_mnist(dir_of(dir), false, 0.5, 0.0); }),
                 "std must be positive"));
}

TEST_CASE("load_fashion_mnist refuses a split of 0 images, naming the file") {
  TempDir dir;
  write_split(dir, "train", {}, 0, {}, true);
  const std::string message = message_of<ValueError>([&] { data::load_fashion_mnist(dir_of(dir), true); });
  CHECK(contains(message, dir.file("train-images-idx3-ubyte.gz") + "' holds 0 images"));
}

TEST_CASE("default_fashion_mnist_dir honours SYNCGRAD_DATA_DIR") {
  const char* previous = std::getenv("SYNCGRAD_DATA_DIR");
  std::string saved = previous != nullptr ? previous : "";
  ::setenv("SYNCGRAD_DATA_DIR", "/data/elsewhere", 1);
  CHECK(data::default_fashion_mnist_dir() == "/data/elsewhere");
  ::unsetenv("SYNCGRAD_DATA_DIR");
  CHECK(data::default_fashion_mnist_dir() == "/usr/share/datasets/fashion-mnist");
  if (previous != nullptr) ::setenv("SYNCGRAD_DATA_DIR", saved.c_str(), 1);
}

TEST_CASE("the installed Fashion-MNIST: 60000/10000 images, 6000/1000 per class, normalised mean ~0") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir)) {
    MESSAGE("SKIPPED: " << dir << " is absent (install Debian's dataset-fashion-mnist)");
    return;
  }
  for (bool train : {true, false}) {
    CAPTURE(train);
    auto start = std::chrono::steady_clock::now();
    data::MnistSplit split = data::load_fashion_mnist(dir, train);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(std::string(train ? "train" : "test") << " split loaded in " << seconds << " s");

    const int64_t n = train ? 60000 : 10000;
    CHECK(split.images.sizes() == Shape{n, 1, 28, 28});
    CHECK(split.labels.sizes() == Shape{n});
    std::vector<int64_t> histogram(10, 0);
    for (int64_t label : to_vector<int64_t>(split.labels)) histogram.at(static_cast<size_t>(label)) += 1;
    CHECK(histogram == std::vector<int64_t>(10, n / 10));

    const float* pixels = split.images.data_ptr<float>();
    double sum = 0, sum_sq = 0;
    for (int64_t i = 0; i < split.images.numel(); ++i) {
      sum += pixels[i];
      sum_sq += static_cast<double>(pixels[i]) * pixels[i];
    }
    double mean = sum / static_cast<double>(split.images.numel());
    double stddev = std::sqrt(sum_sq / static_cast<double>(split.images.numel()) - mean * mean);
    CHECK(std::abs(mean) < 0.01);
    CHECK(stddev == doctest::Approx(1.0).epsilon(0.02));
  }
}
