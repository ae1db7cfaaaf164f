// Malformed safetensors files: each is written into a temporary directory and must raise a typed error that
// names the file and the offending field. Also the argument errors of save_safetensors.
#include <doctest/doctest.h>

#include <filesystem>

#include "syncgrad.h"
#include "tests/io/io_test_util.h"

using namespace syncgrad;
using syncgrad::testing::Bytes;
using syncgrad::testing::TempDir;

namespace {

// A file with the given header text (space-padded to 8 bytes) and data section.
Bytes file_with(std::string header, const Bytes& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  Bytes bytes;
  syncgrad::testing::append_u64_le(bytes, header.size());
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

// Writes `bytes` and expects load_safetensors to throw E whose message names the file and contains `needle`.
template <class E>
void check_load_error(const Bytes& bytes, const std::string& needle) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  syncgrad::testing::write_bytes(path, bytes);
  try {
    io::load_safetensors(path);
    FAIL("expected an error containing: " << needle);
  } catch (const E& e) {
    std::string message = e.what();
    CAPTURE(message);
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find(needle) != std::string::npos);
  }
}

const Bytes kEightBytes(8, 0);

}  // namespace

TEST_CASE("safetensors load: missing file is an IOError naming the path and the OS reason") {
  TempDir dir;
  std::string path = dir.file("absent.safetensors");
  try {
    io::load_safetensors(path);
    FAIL("expected IOError");
  } catch (const IOError& e) {
    std::string message = e.what();
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("No such file or directory") != std::string::npos);
  }
}

TEST_CASE("safetensors load: truncated length field, header length too large, header over 100 MB") {
  check_load_error<ValueError>({1, 2, 3}, "too short for the 8-byte header length");
  Bytes too_long;
  syncgrad::testing::append_u64_le(too_long, 1000);
  too_long.insert(too_long.end(), 20, ' ');
  check_load_error<ValueError>(too_long, "header length 1000 is larger than the 20 bytes");
  Bytes huge;
  syncgrad::testing::append_u64_le(huge, 200'000'000);
  huge.insert(huge.end(), 16, ' ');
  check_load_error<ValueError>(huge, "header length 200000000 exceeds the limit of 100000000");
}

TEST_CASE("safetensors load: invalid JSON and non-object header") {
  check_load_error<ValueError>(file_with(R"({"a": {"dtype": )", {}), "header is not valid JSON");
  check_load_error<ValueError>(file_with("[1, 2]", {}), "expected a JSON object, found array");
}

TEST_CASE("safetensors load: unknown dtype, missing and ill-typed fields") {
  check_load_error<ValueError>(file_with(R"({"w":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})", kEightBytes),
                               "tensor 'w': unsupported dtype 'I8'");
  check_load_error<ValueError>(file_with(R"({"w":{"dtype":"F32","shape":[2]}})", kEightBytes),
                               "tensor 'w': missing field 'data_offsets'");
  check_load_error<ValueError>(file_with(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", kEightBytes),
                               "'w.shape': expected a non-negative integer, found -2");
  check_load_error<ValueError>(file_with(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", kEightBytes),
                               "tensor 'w': field 'data_offsets' must be [begin, end]");
  check_load_error<ValueError>(file_with(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", kEightBytes),
                               "end before they begin");
  check_load_error<ValueError>(file_with(R"({"__metadata__":{"epoch":3}})", {}), "'__metadata__.epoch': expected a string");
  check_load_error<ValueError>(file_with(R"({"__metadata__":[]})", {}), "'__metadata__': expected an object");
}

TEST_CASE("safetensors load: shape and data_offsets disagree") {
  check_load_error<ValueError>(file_with(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", kEightBytes),
                               "tensor 'w': shape [3] of F32 needs 12 bytes but data_offsets [0,8] span 8");
  check_load_error<ValueError>(
      file_with(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", kEightBytes),
      "tensor 'w': shape [4294967296, 4294967296] of F64 has 2^63 or more elements");
  check_load_error<ValueError>(
      file_with(R"({"w":{"dtype":"F64","shape":[2305843009213693953],"data_offsets":[0,8]}})", kEightBytes),
      "needs more than 2^64 bytes");
}

TEST_CASE("safetensors load: overlapping, gapped, out-of-range and incompletely covered data") {
  check_load_error<ValueError>(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                         Bytes(12, 0)),
                               "tensor 'b': data_offsets [4, 12] overlap tensor 'a'");
  check_load_error<ValueError>(file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                         Bytes(12, 0)),
                               "tensor 'b': data_offsets [8, 12] leave a gap of 4 bytes");
  check_load_error<ValueError>(file_with(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", kEightBytes),
                               "tensor 'a': data_offsets [0, 16] are out of range: the data section has 8 bytes");
  check_load_error<ValueError>(file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", kEightBytes),
                               "the data section has 8 bytes but the tensors cover only 4");
}

TEST_CASE("safetensors load: duplicate tensor names") {
  check_load_error<ValueError>(file_with(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                         R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                                         Bytes(2, 0)),
                               "duplicate tensor name 'a'");
}

TEST_CASE("safetensors load: a saved file cut short is reported as truncated") {
  TempDir dir;
  std::string path = dir.file("cut.safetensors");
  io::save_safetensors(path, {{"w", zeros({4, 4})}});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  try {
    io::load_safetensors(path);
    FAIL("expected ValueError");
  } catch (const ValueError& e) {
    std::string message = e.what();
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("tensor 'w': data_offsets [0, 64] are out of range") != std::string::npos);
    CHECK(message.find("truncated?") != std::string::npos);
  }
}

TEST_CASE("safetensors save: duplicate, reserved and undefined tensors are ValueErrors and write nothing") {
  TempDir dir;
  std::string path = dir.file("never.safetensors");
  using syncgrad::testing::contains;
  using syncgrad::testing::message_of;
  CHECK(contains(message_of<ValueError>([&] { io::save_safetensors(path, {{"a", zeros({1})}, {"a", zeros({2})}}); }),
                 "duplicate tensor name 'a'"));
  CHECK(contains(message_of<ValueError>([&] { io::save_safetensors(path, {{"__metadata__", zeros({1})}}); }),
                 "'__metadata__' is reserved"));
  CHECK(contains(message_of<ValueError>([&] { io::save_safetensors(path, {{"w", Tensor()}}); }),
                 "tensor 'w' is undefined"));
  CHECK(dir.entries().empty());
}
