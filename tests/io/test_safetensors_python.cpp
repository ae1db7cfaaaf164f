// Cross-check with the Python `safetensors` library when it is importable: Python reads a file written here,
// and this reader loads a file written by Python. Skips visibly otherwise (nothing is installed by the test).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include "syncgrad.h"
#include "tests/io/io_test_util.h"

using namespace syncgrad;
using syncgrad::testing::TempDir;

namespace {

constexpr const char* kCheckScript = R"(
import sys
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

ours, theirs = sys.argv[1], sys.argv[2]
loaded = load_file(ours)
assert sorted(loaded) == ["b", "f16", "i32", "i64", "u8", "w"], sorted(loaded)
assert loaded["w"].dtype == np.float32 and loaded["w"].shape == (2, 3), loaded["w"]
assert np.array_equal(loaded["w"], np.array([[0, 2, 4], [1, 3, 5]], dtype=np.float32)), loaded["w"]
assert loaded["f16"].dtype == np.float16 and loaded["f16"].tolist() == [0.5, -1.5]
assert loaded["i64"].tolist() == [-(2 ** 40), 7]
assert loaded["i32"].dtype == np.int32 and loaded["i32"].tolist() == [[1], [-2]]
assert loaded["u8"].tolist() == [0, 255]
assert loaded["b"].dtype == np.bool_ and loaded["b"].tolist() == [True, False, True]
with safe_open(ours, framework="np") as f:
    assert f.metadata() == {"format": "pt", "step": "12"}, f.metadata()

save_file({"x": np.arange(6, dtype=np.float64).reshape(3, 2), "flags": np.array([False, True]),
           "z": np.array(5, dtype=np.int64)}, theirs, metadata={"origin": "python"})
)";

}  // namespace

TEST_CASE("Python safetensors reads our files and we read its files") {
  if (std::system("python3 -c 'import safetensors, numpy' >/dev/null 2>&1") != 0) {
    MESSAGE("SKIPPED: python3 with the safetensors and numpy modules is not available");
    return;
  }
  TempDir dir;
  std::string ours = dir.file("ours.safetensors");
  std::string theirs = dir.file("theirs.safetensors");
  std::string script = dir.file("check.py");
  std::ofstream(script) << kCheckScript;

  Tensor w = raw::transpose(raw::reshape(arange(0, 6, 1, {.dtype = DType::f32}), {3, 2}), 0, 1);  // (2, 3)
  io::save_safetensors(ours,
                       {{"w", w},
                        {"f16", raw::to(tensor({0.5f, -1.5f}), DType::f16)},
                        {"i64", tensor({-(int64_t{1} << 40), int64_t{7}})},
                        {"i32", raw::to(from_vector(std::vector<int64_t>{1, -2}, {2, 1}), DType::i32)},
                        {"u8", raw::to(tensor({0, 255}), DType::u8)},
                        {"b", raw::to(tensor({1, 0, 1}), DType::boolean)}},
                       {{"format", "pt"}, {"step", "12"}});
  std::string command = "python3 '" + script + "' '" + ours + "' '" + theirs + "'";
  REQUIRE(std::system(command.c_str()) == 0);

  io::SafetensorsContents loaded = io::load_safetensors(theirs);
  CHECK(loaded.metadata == std::map<std::string, std::string>{{"origin", "python"}});
  std::map<std::string, Tensor> by_name(loaded.tensors.begin(), loaded.tensors.end());
  REQUIRE(by_name.size() == 3);
  CHECK(by_name["x"].dtype() == DType::f64);
  CHECK(by_name["x"].sizes() == Shape{3, 2});
  CHECK(to_vector<double>(by_name["x"]) == std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(to_vector<uint8_t>(by_name["flags"]) == std::vector<uint8_t>{0, 1});
  CHECK(by_name["z"].dim() == 0);
  CHECK(by_name["z"].item<int64_t>() == 5);
}
