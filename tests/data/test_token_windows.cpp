// TokenWindowDataset: byte tokens, (input, input shifted by one) windows with a stride, batching through the
// DataLoader to (B, T), and errors for short or missing files and bad sizes.
#include <doctest/doctest.h>

#include "syncgrad.h"
#include "tests/check_error.h"
#include "tests/io/io_test_util.h"

using namespace syncgrad;
using syncgrad::testing::check_error;
using syncgrad::testing::TempDir;
using syncgrad::testing::write_bytes;

TEST_CASE("example i is tokens[i*stride .. +T) and the same window shifted by one") {
  TempDir dir;
  write_bytes(dir.file("text"), {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'});  // 10 tokens
  data::TokenWindowDataset windows(dir.file("text"), 4);  // stride 4: windows at 0 and 4 (8 + 1 > 10 - 1)
  CHECK(windows.size() == 2);
  data::Example e = windows.get(1);
  CHECK(to_vector<int64_t>(e.data) == std::vector<int64_t>{'e', 'f', 'g', 'h'});
  CHECK(to_vector<int64_t>(e.target) == std::vector<int64_t>{'f', 'g', 'h', 'i'});
  data::TokenWindowDataset sliding(dir.file("text"), 4, 1);
  CHECK(sliding.size() == 6);
  CHECK(to_vector<int64_t>(sliding.get(5).target) == std::vector<int64_t>{'g', 'h', 'i', 'j'});
  data::DataLoader loader(std::make_shared<data::TokenWindowDataset>(dir.file("text"), 4, 1),
                          {.batch_size = 4, .num_workers = 1});
  auto it = loader.begin();
  CHECK(it->data.sizes() == Shape{4, 4});
  CHECK(it->target.sizes() == Shape{4, 4});
  CHECK(it->data.dtype() == DType::i64);
}

TEST_CASE("TokenWindowDataset errors name the file and the sizes") {
  TempDir dir;
  write_bytes(dir.file("tiny"), {'x', 'y', 'z'});
  check_error<ValueError>([&] { data::TokenWindowDataset(dir.file("tiny"), 3); }, {"tiny", "3 tokens", "needs 4"});
  check_error<IOError>([&] { data::TokenWindowDataset(dir.file("absent"), 3); }, {"absent", "cannot open"});
  check_error<ValueError>([&] { data::TokenWindowDataset(dir.file("tiny"), 0); }, {"block_size", "0"});
  check_error<ValueError>([&] { data::TokenWindowDataset(dir.file("tiny"), 1, -2); }, {"stride", "-2"});
}
