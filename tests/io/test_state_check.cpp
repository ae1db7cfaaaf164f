// check_state_matches: one error listing every missing, unexpected, mis-shaped and mis-typed name.
#include <doctest/doctest.h>

#include "syncgrad.h"
#include "tests/io/io_test_util.h"

using namespace syncgrad;
using syncgrad::testing::contains;
using syncgrad::testing::message_of;

TEST_CASE("check_state_matches accepts identical names, shapes and dtypes in any order") {
  io::NamedTensors expected = {{"w", zeros({2, 3})}, {"b", zeros({3})}};
  io::NamedTensors loaded = {{"b", ones({3})}, {"w", ones({2, 3})}};
  CHECK_NOTHROW(io::check_state_matches(expected, loaded, "ckpt.safetensors"));
}

TEST_CASE("check_state_matches lists every problem in one ValueError") {
  io::NamedTensors expected = {
      {"fc1.weight", zeros({4, 3})}, {"fc1.bias", zeros({4})}, {"fc2.weight", zeros({2, 4})}};
  io::NamedTensors loaded = {{"fc1.weight", zeros({3, 4})},
                             {"fc1.bias", zeros({4}, {.dtype = DType::f64})},
                             {"conv.weight", zeros({8, 1, 3, 3})}};
  std::string message = message_of<ValueError>([&] { io::check_state_matches(expected, loaded, "other.safetensors"); });
  CAPTURE(message);
  CHECK(contains(message, "checkpoint 'other.safetensors' does not match the expected state (4 problems)"));
  CHECK(contains(message, "shape mismatch: 'fc1.weight' expected [4, 3], found [3, 4]"));
  CHECK(contains(message, "dtype mismatch: 'fc1.bias' expected float32, found float64"));
  CHECK(contains(message, "missing: 'fc2.weight' (float32 [2, 4])"));
  CHECK(contains(message, "unexpected: 'conv.weight' (float32 [8, 1, 3, 3])"));
  CHECK(contains(message, "different model"));
}

TEST_CASE("check_state_matches against a loaded checkpoint of another model") {
  syncgrad::testing::TempDir dir;
  std::string path = dir.file("mlp.safetensors");
  io::save_safetensors(path, {{"fc.weight", zeros({10, 784})}, {"fc.bias", zeros({10})}});
  io::NamedTensors cnn = {{"conv.weight", zeros({8, 1, 5, 5})}, {"fc.weight", zeros({10, 128})},
                          {"fc.bias", zeros({10})}};
  std::string message =
      message_of<ValueError>([&] { io::check_state_matches(cnn, io::load_safetensors(path).tensors, path); });
  CAPTURE(message);
  CHECK(contains(message, "(2 problems)"));
  CHECK(contains(message, path));
  CHECK(contains(message, "missing: 'conv.weight'"));
  CHECK(contains(message, "shape mismatch: 'fc.weight' expected [10, 128], found [10, 784]"));
}
