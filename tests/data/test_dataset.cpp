// Datasets: TensorDataset views and shape checks, MnistDataset over a hand-built IDX directory and over the
// installed Fashion-MNIST, and the out-of-range errors.
#include <doctest/doctest.h>

#include <filesystem>

#include "syncgrad.h"
#include "tests/check_error.h"
#include "tests/io/idx_test_files.h"

using namespace syncgrad;
using data::Example;
using data::MnistDataset;
using data::TensorDataset;
using syncgrad::testing::Bytes;
using syncgrad::testing::check_error;
using syncgrad::testing::idx_bytes;
using syncgrad::testing::TempDir;

TEST_CASE("TensorDataset returns views of row i of data and targets") {
  Tensor x = arange(0, 12, 1, {.dtype = DType::f32}).reshape({4, 3});
  Tensor y = from_vector(std::vector<int64_t>{7, 8, 9, 10}, {4});
  TensorDataset ds(x, y);
  CHECK(ds.size() == 4);
  Example e = ds.get(2);
  CHECK(e.data.sizes() == Shape{3});
  CHECK(to_vector<float>(e.data) == std::vector<float>{6.f, 7.f, 8.f});
  CHECK(e.target.dim() == 0);
  CHECK(e.target.item<int64_t>() == 9);
  // Views: same storage as the source tensors.
  CHECK(e.data.impl()->storage() == x.impl()->storage());
  CHECK(e.target.impl()->storage() == y.impl()->storage());
}

TEST_CASE("TensorDataset and Dataset::get errors name the shapes, the index and the size") {
  check_error<ShapeError>([] { TensorDataset(zeros({4, 3}), zeros({5})); }, {"[4, 3]", "[5]", "first dim"});
  check_error<ShapeError>([] { TensorDataset(zeros({}), zeros({1})); }, {"[]", "[1]"});
  TensorDataset ds(zeros({4, 3}), zeros({4}));
  check_error<IndexError>([&] { ds.get(4); }, {"index 4", "size 4"});
  check_error<IndexError>([&] { ds.get(-1); }, {"index -1", "size 4"});
  TensorDataset empty_ds(zeros({0, 2}), zeros({0}));
  CHECK(empty_ds.size() == 0);
  check_error<IndexError>([&] { empty_ds.get(0); }, {"index 0", "size 0"});
}

TEST_CASE("MnistDataset over a hand-built split gives (1, 28, 28) f32 images and 0-dim i64 labels") {
  TempDir dir;
  Bytes pixels(2 * 28 * 28, 0);
  std::fill(pixels.begin() + 28 * 28, pixels.end(), 255);
  syncgrad::testing::write_gzipped(dir.file("t10k-images-idx3-ubyte.gz"), idx_bytes(0x00000803, {2, 28, 28}, pixels));
  syncgrad::testing::write_gzipped(dir.file("t10k-labels-idx1-ubyte.gz"), idx_bytes(0x00000801, {2}, {3, 8}));
  MnistDataset ds(std::filesystem::path(dir.file("x")).parent_path().string(), false);
  CHECK(ds.size() == 2);
  Example e = ds.get(1);
  CHECK(e.data.sizes() == Shape{1, 28, 28});
  CHECK(e.data.dtype() == DType::f32);
  CHECK(e.target.dim() == 0);
  CHECK(e.target.dtype() == DType::i64);
  CHECK(e.target.item<int64_t>() == 8);
  CHECK(e.data.data_ptr<float>()[0] == doctest::Approx((1.0 - 0.2860) / 0.3530).epsilon(1e-5));
  check_error<IndexError>([&] { ds.get(2); }, {"index 2", "size 2"});
}

TEST_CASE("MnistDataset over the installed Fashion-MNIST test split") {
  const std::string dir = data::default_fashion_mnist_dir();
  if (!std::filesystem::exists(dir)) {
    MESSAGE("SKIPPED: " << dir << " is absent (install Debian's dataset-fashion-mnist)");
    return;
  }
  MnistDataset ds(dir, false);
  CHECK(ds.size() == 10000);
  Example e = ds.get(9999);
  CHECK(e.data.sizes() == Shape{1, 28, 28});
  CHECK(e.data.dtype() == DType::f32);
  CHECK(e.target.dim() == 0);
  CHECK(e.target.dtype() == DType::i64);
  const int64_t label = e.target.item<int64_t>();
  CHECK(label >= 0);
  CHECK(label < 10);
}
