// CIFAR-10 binary batches: hand-built files in the exact format, the split layout, and errors for missing,
// empty, truncated and mislabelled files naming the file, the record/offset and expected vs found values.
#include <doctest/doctest.h>

#include "syncgrad.h"
#include "tests/check_error.h"
#include "tests/data/cifar_test_files.h"

using namespace syncgrad;
using syncgrad::testing::Bytes;
using syncgrad::testing::check_error;
using syncgrad::testing::cifar_bytes;
using syncgrad::testing::TempDir;
using syncgrad::testing::write_bytes;

TEST_CASE("read_cifar10_file reads labels and CHW pixels record by record") {
  TempDir dir;
  write_bytes(dir.file("b.bin"), cifar_bytes({3, 9, 0}));
  data::CifarSplit split = data::read_cifar10_file(dir.file("b.bin"));
  CHECK(split.images.sizes() == Shape{3, 3, 32, 32});
  CHECK(split.images.dtype() == DType::u8);
  CHECK(to_vector<int64_t>(split.labels) == std::vector<int64_t>{3, 9, 0});
  std::vector<int64_t> pixels = to_vector<int64_t>(split.images);
  CHECK(pixels[0] == 0);
  CHECK(pixels[3072 + 1024 + 5] == (7 + 1024 + 5) % 256);  // record 1, green channel, row 0, column 5
  CHECK(pixels[2 * 3072 + 2 * 1024 + 32 * 31 + 31] == (14 + 2 * 1024 + 32 * 31 + 31) % 256);
}

TEST_CASE("load_cifar10 joins data_batch_1..5 for train and reads test_batch for test; the dataset scales to [0, 1]") {
  TempDir dir;
  for (int b = 1; b <= 5; ++b) {
    write_bytes(dir.file("data_batch_" + std::to_string(b) + ".bin"), cifar_bytes({uint8_t(b), 1}));
  }
  write_bytes(dir.file("test_batch.bin"), cifar_bytes({7}));
  data::CifarSplit train = data::load_cifar10(dir.file(""), true);
  CHECK(train.labels.numel() == 10);
  CHECK(to_vector<int64_t>(train.labels)[8] == 5);
  data::Cifar10Dataset test(dir.file(""), false);
  REQUIRE(test.size() == 1);
  data::Example e = test.get(0);
  CHECK(e.data.sizes() == Shape{3, 32, 32});
  CHECK(e.data.dtype() == DType::f32);
  CHECK(e.target.item<int64_t>() == 7);
  CHECK(to_vector<float>(e.data)[255] == doctest::Approx(255 / 255.0));
  CHECK(to_vector<float>(e.data)[1] == doctest::Approx(1 / 255.0));
  check_error<IndexError>([&] { test.get(1); }, {"index 1", "size 1"});
}

TEST_CASE("bad CIFAR-10 files: missing, empty, truncated, mislabelled") {
  TempDir dir;
  check_error<IOError>([&] { data::load_cifar10(dir.file(""), false); }, {"test_batch.bin", "cifar-10-batches-bin"});
  check_error<IOError>([&] { data::read_cifar10_file(dir.file("none.bin")); }, {"none.bin", "cannot open"});
  write_bytes(dir.file("empty.bin"), {});
  check_error<ValueError>([&] { data::read_cifar10_file(dir.file("empty.bin")); }, {"empty.bin", "empty", "3073"});
  Bytes truncated = cifar_bytes({1, 2});
  truncated.resize(truncated.size() - 100);
  write_bytes(dir.file("short.bin"), truncated);
  check_error<ValueError>([&] { data::read_cifar10_file(dir.file("short.bin")); },
                          {"short.bin", "size 6046", "not a multiple of the 3073-byte record", "record 1",
                           "offset 3073", "has 2973 bytes, expected 3073"});
  write_bytes(dir.file("label.bin"), cifar_bytes({1, 2, 12}));
  check_error<ValueError>([&] { data::read_cifar10_file(dir.file("label.bin")); },
                          {"label.bin", "record 2", "offset 6146", "label byte is 12", "0..9"});
}
