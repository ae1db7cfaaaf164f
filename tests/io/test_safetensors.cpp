// safetensors round trips (every dtype, non-contiguous input, scalars, empty tensors, metadata, order) and a
// byte-exact comparison against a file assembled by hand from the format specification.
#include <doctest/doctest.h>

#include <cstring>

#include "syncgrad.h"
#include "tests/io/io_test_util.h"

using namespace syncgrad;
using syncgrad::testing::Bytes;
using syncgrad::testing::TempDir;

namespace {

// The bytes of a tensor's elements in row-major order.
Bytes element_bytes(const Tensor& t) {
  Tensor dense = raw::contiguous(t);
  const auto* begin = static_cast<const uint8_t*>(dense.data_ptr());
  return Bytes(begin, begin + dense.nbytes());
}

}  // namespace

TEST_CASE("safetensors round trip keeps every dtype, shape, value and the given order") {
  TempDir dir;
  Tensor base = from_vector(std::vector<double>{1.5, -2.25, 3.0, 0.125, -0.5, 1e-3}, {2, 3});
  io::NamedTensors tensors = {
      {"weights.f32", raw::to(base, DType::f32)},
      {"f64", base},
      {"f16", raw::to(base, DType::f16)},
      {"bf16", raw::to(base, DType::bf16)},
      {"i64", from_vector(std::vector<int64_t>{-5, 0, 1LL << 40}, {3})},
      {"i32", raw::to(from_vector(std::vector<int64_t>{-7, 123456, 2}, {3, 1}), DType::i32)},
      {"u8", raw::to(from_vector(std::vector<int64_t>{0, 17, 255, 128}, {2, 2}), DType::u8)},
      {"bool", raw::to(from_vector(std::vector<int64_t>{1, 0, 0, 1, 1}, {5}), DType::boolean)},
      {"scalar", scalar_tensor(3.5, DType::f64, kCPU)},
      {"empty", zeros({0, 4})},
      {"a.transposed", raw::transpose(raw::reshape(arange(0, 12, 1, {.dtype = DType::f32}), {3, 4}), 0, 1)},
  };
  std::map<std::string, std::string> metadata = {{"format", "pt"}, {"epoch", "3"}, {"note", "ünïcode ✓"}};
  std::string path = dir.file("model.safetensors");
  io::save_safetensors(path, tensors, metadata);

  io::SafetensorsContents loaded = io::load_safetensors(path);
  CHECK(loaded.metadata == metadata);
  REQUIRE(loaded.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    CAPTURE(tensors[i].first);
    const Tensor& expected = tensors[i].second;
    const Tensor& got = loaded.tensors[i].second;
    CHECK(loaded.tensors[i].first == tensors[i].first);
    CHECK(got.dtype() == expected.dtype());
    CHECK(got.sizes() == expected.sizes());
    CHECK(got.device() == kCPU);
    CHECK(got.is_contiguous());
    CHECK(element_bytes(got) == element_bytes(expected));
  }
  CHECK(to_vector<float>(loaded.tensors[2].second) == to_vector<float>(raw::to(base, DType::f16)));
  CHECK(to_vector<float>(loaded.tensors[2].second)[1] == -2.25f);
  CHECK(to_vector<int64_t>(loaded.tensors[4].second) == std::vector<int64_t>{-5, 0, 1LL << 40});
  CHECK(to_vector<uint8_t>(loaded.tensors[6].second) == std::vector<uint8_t>{0, 17, 255, 128});
  CHECK(to_vector<uint8_t>(loaded.tensors[7].second) == std::vector<uint8_t>{1, 0, 0, 1, 1});
  CHECK(loaded.tensors[8].second.item<double>() == 3.5);
  // The transposed (4, 3) view is stored in its logical row-major order.
  CHECK(to_vector<float>(loaded.tensors[10].second) ==
        std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
}

TEST_CASE("safetensors without metadata omits the __metadata__ entry and loads an empty map") {
  TempDir dir;
  std::string path = dir.file("plain.safetensors");
  io::save_safetensors(path, {{"x", tensor({1.f, 2.f})}});
  Bytes bytes = syncgrad::testing::read_bytes(path);
  std::string text(bytes.begin(), bytes.end());
  CHECK(text.find("__metadata__") == std::string::npos);
  io::SafetensorsContents loaded = io::load_safetensors(path);
  CHECK(loaded.metadata.empty());
  CHECK(to_vector<float>(loaded.tensors.at(0).second) == std::vector<float>{1.f, 2.f});
}

TEST_CASE("safetensors bytes match a file assembled by hand from the specification") {
  // Header: compact JSON, __metadata__ first, tensors in the order given, padded with spaces to 8 bytes.
  std::string header =
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("n":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
      R"("h":{"dtype":"BF16","shape":[1,1],"data_offsets":[16,18]},)"
      R"("m":{"dtype":"BOOL","shape":[2],"data_offsets":[18,20]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  REQUIRE(header.size() % 8 == 0);

  Bytes expected;
  syncgrad::testing::append_u64_le(expected, header.size());
  expected.insert(expected.end(), header.begin(), header.end());
  const Bytes data = {
      0x00, 0x00, 0x80, 0x3f,                          // 1.0f
      0x00, 0x00, 0x00, 0xc0,                          // -2.0f
      0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,  // INT64_MIN + 7
      0xc0, 0x3f,                                      // bf16 1.5
      0x01, 0x00,                                      // true, false
  };
  expected.insert(expected.end(), data.begin(), data.end());

  TempDir dir;
  std::string path = dir.file("spec.safetensors");
  io::save_safetensors(path,
                       {{"w", tensor({1.f, -2.f})},
                        {"n", scalar_tensor(INT64_MIN + 7, DType::i64, kCPU)},
                        {"h", raw::to(full({1, 1}, 1.5), DType::bf16)},
                        {"m", raw::to(tensor({1, 0}), DType::boolean)}},
                       {{"format", "pt"}});
  CHECK(syncgrad::testing::read_bytes(path) == expected);

  std::string hand_made = dir.file("hand.safetensors");
  syncgrad::testing::write_bytes(hand_made, expected);
  io::SafetensorsContents loaded = io::load_safetensors(hand_made);
  REQUIRE(loaded.tensors.size() == 4);
  CHECK(loaded.metadata == std::map<std::string, std::string>{{"format", "pt"}});
  CHECK(loaded.tensors[0].first == "w");
  CHECK(to_vector<float>(loaded.tensors[0].second) == std::vector<float>{1.f, -2.f});
  CHECK(loaded.tensors[1].second.dim() == 0);
  CHECK(loaded.tensors[1].second.item<int64_t>() == INT64_MIN + 7);
  CHECK(loaded.tensors[2].second.dtype() == DType::bf16);
  CHECK(to_vector<float>(loaded.tensors[2].second) == std::vector<float>{1.5f});
  CHECK(to_vector<uint8_t>(loaded.tensors[3].second) == std::vector<uint8_t>{1, 0});
}

TEST_CASE("safetensors load keeps file order (by data offset), not header or name order") {
  std::string header = R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                       R"("c":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                       R"("a":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  Bytes bytes;
  syncgrad::testing::append_u64_le(bytes, header.size());
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), {10, 20, 30});
  TempDir dir;
  std::string path = dir.file("order.safetensors");
  syncgrad::testing::write_bytes(path, bytes);
  io::SafetensorsContents loaded = io::load_safetensors(path);
  REQUIRE(loaded.tensors.size() == 3);
  CHECK(loaded.tensors[0].first == "c");
  CHECK(loaded.tensors[1].first == "b");
  CHECK(loaded.tensors[2].first == "a");
  CHECK(loaded.tensors[0].second.item<int64_t>() == 10);
  CHECK(loaded.tensors[2].second.item<int64_t>() == 30);
}

TEST_CASE("safetensors bool bytes other than 0/1 load as true") {
  std::string header = R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  Bytes bytes;
  syncgrad::testing::append_u64_le(bytes, header.size());
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), {0, 2, 255});
  TempDir dir;
  std::string path = dir.file("bool.safetensors");
  syncgrad::testing::write_bytes(path, bytes);
  Tensor m = io::load_safetensors(path).tensors.at(0).second;
  CHECK(to_vector<uint8_t>(m) == std::vector<uint8_t>{0, 1, 1});
}

TEST_CASE("safetensors bytes equal those Python's safetensors 0.8.0 wrote for the same tensors in its order") {
  // safetensors.numpy.save({"w": float32 [1, -2], "n": int64 INT64_MIN + 7}, metadata={"format": "pt"}); Python
  // orders tensors by dtype alignment, then name: n before w.
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"n":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}      )";
  Bytes python_bytes = {0x90, 0, 0, 0, 0, 0, 0, 0};
  python_bytes.insert(python_bytes.end(), header.begin(), header.end());
  const Bytes data = {0x07, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0};
  python_bytes.insert(python_bytes.end(), data.begin(), data.end());

  TempDir dir;
  std::string path = dir.file("like_python.safetensors");
  io::save_safetensors(path, {{"n", scalar_tensor(INT64_MIN + 7, DType::i64, kCPU)}, {"w", tensor({1.f, -2.f})}},
                       {{"format", "pt"}});
  CHECK(syncgrad::testing::read_bytes(path) == python_bytes);
}
