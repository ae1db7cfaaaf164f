// IDX reader: raw and gzipped files built by hand, and each content error (magic, truncation, trailing data).
#include <doctest/doctest.h>

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

Bytes counting_bytes(size_t n) {
  Bytes bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7 % 256);
  return bytes;
}

}  // namespace

TEST_CASE("read_idx_images reads raw and gzipped files into u8 (N, rows, cols)") {
  TempDir dir;
  Bytes pixels = counting_bytes(2 * 3 * 4);
  Bytes file = idx_bytes(0x00000803, {2, 3, 4}, pixels);
  syncgrad::testing::write_bytes(dir.file("images.idx"), file);
  syncgrad::testing::write_gzipped(dir.file("images.idx.gz"), file);
  for (const char* name : {"images.idx", "images.idx.gz"}) {
    CAPTURE(name);
    Tensor images = data::read_idx_images(dir.file(name));
    CHECK(images.dtype() == DType::u8);
    CHECK(images.sizes() == Shape{2, 3, 4});
    CHECK(to_vector<uint8_t>(images) == pixels);
  }
}

TEST_CASE("read_idx_labels reads raw and gzipped files into u8 (N)") {
  TempDir dir;
  Bytes file = idx_bytes(0x00000801, {5}, {3, 0, 9, 1, 1});
  syncgrad::testing::write_bytes(dir.file("labels"), file);
  syncgrad::testing::write_gzipped(dir.file("labels.gz"), file);
  for (const char* name : {"labels", "labels.gz"}) {
    Tensor labels = data::read_idx_labels(dir.file(name));
    CHECK(labels.sizes() == Shape{5});
    CHECK(to_vector<uint8_t>(labels) == Bytes{3, 0, 9, 1, 1});
  }
}

TEST_CASE("read_idx errors: missing file, wrong magic, short header, truncated and trailing data") {
  TempDir dir;
  std::string missing = dir.file("absent.gz");
  std::string message = message_of<IOError>([&] { data::read_idx_images(missing); });
  CHECK(contains(message, missing));
  CHECK(contains(message, "No such file or directory"));

  std::string labels_file = dir.file("labels");
  syncgrad::testing::write_bytes(labels_file, idx_bytes(0x00000801, {2}, {1, 2}));
  message = message_of<ValueError>([&] { data::read_idx_images(labels_file); });
  CAPTURE(message);
  CHECK(contains(message, labels_file));
  CHECK(contains(message, "wrong magic number: expected 0x00000803, found 0x00000801"));

  std::string tiny = dir.file("tiny");
  syncgrad::testing::write_bytes(tiny, {0, 0});
  CHECK(contains(message_of<ValueError>([&] { data::read_idx_labels(tiny); }), "too short for the magic number"));

  std::string short_header = dir.file("short-header");
  syncgrad::testing::write_bytes(short_header, {0, 0, 8, 3, 0, 0, 0, 1});
  CHECK(contains(message_of<ValueError>([&] { data::read_idx_images(short_header); }),
                 "truncated header: expected 16 bytes, found 8"));

  Bytes truncated = idx_bytes(0x00000803, {2, 3, 4}, counting_bytes(20));
  std::string raw_truncated = dir.file("truncated");
  std::string gz_truncated = dir.file("truncated.gz");
  syncgrad::testing::write_bytes(raw_truncated, truncated);
  syncgrad::testing::write_gzipped(gz_truncated, truncated);
  for (const std::string& path : {raw_truncated, gz_truncated}) {
    message = message_of<ValueError>([&] { data::read_idx_images(path); });
    CAPTURE(message);
    CHECK(contains(message, path));
    CHECK(contains(message, "truncated data: expected 24 bytes, found 20"));
  }

  std::string trailing = dir.file("trailing");
  syncgrad::testing::write_bytes(trailing, idx_bytes(0x00000801, {2}, {1, 2, 3}));
  CHECK(contains(message_of<ValueError>([&] { data::read_idx_labels(trailing); }),
                 "trailing data after the expected 2 bytes"));
}

TEST_CASE("read_idx rejects a 16-byte header whose shape has 2^64 elements") {
  // Unchecked, 65536 * 16777216 * 16777216 wraps to 0: an empty payload matched it and the tensor claimed that shape.
  TempDir dir;
  Bytes file = idx_bytes(0x00000803, {65536, 16777216, 16777216}, {});
  REQUIRE(file.size() == 16);
  std::string raw = dir.file("x.idx");
  std::string gzipped = dir.file("x.idx.gz");
  syncgrad::testing::write_bytes(raw, file);
  syncgrad::testing::write_gzipped(gzipped, file);
  for (const std::string& path : {raw, gzipped}) {
    std::string message = message_of<ValueError>([&] { data::read_idx_images(path); });
    CAPTURE(message);
    CHECK(contains(message, path));
    CHECK(contains(message, "shape [65536, 16777216, 16777216] has 2^63 or more elements"));
  }
}

TEST_CASE("read_idx checks that a raw file holds the bytes its header promises before allocating them") {
  TempDir dir;
  std::string path = dir.file("promises-4GiB.idx");
  syncgrad::testing::write_bytes(path, idx_bytes(0x00000803, {65536, 256, 256}, counting_bytes(10)));
  std::string message = message_of<ValueError>([&] { data::read_idx_images(path); });
  CAPTURE(message);
  CHECK(contains(message, path));
  CHECK(contains(message, "truncated data: expected 4294967296 bytes, found 10"));
}

TEST_CASE("read_idx reports a gzip stream cut off mid-way as truncated data") {
  TempDir dir;
  std::string complete = dir.file("complete.gz");
  syncgrad::testing::write_gzipped(complete, idx_bytes(0x00000803, {4, 28, 28}, counting_bytes(4 * 28 * 28)));
  Bytes compressed = syncgrad::testing::read_bytes(complete);
  compressed.resize(compressed.size() / 2);
  std::string cut = dir.file("cut.gz");
  syncgrad::testing::write_bytes(cut, compressed);
  std::string message = message_of<ValueError>([&] { data::read_idx_images(cut); });
  CAPTURE(message);
  CHECK(contains(message, cut));
  CHECK(contains(message, "(gzipped): truncated data: expected 3136 bytes, found"));
}

TEST_CASE("read_idx reports a gzip stream whose CRC does not match as corrupt") {
  TempDir dir;
  std::string path = dir.file("bad-crc.gz");
  syncgrad::testing::write_gzipped(path, idx_bytes(0x00000801, {3}, {1, 2, 3}));
  Bytes compressed = syncgrad::testing::read_bytes(path);
  compressed[compressed.size() - 8] ^= 0xff;  // the CRC32 trailer
  syncgrad::testing::write_bytes(path, compressed);
  std::string message = message_of<ValueError>([&] { data::read_idx_labels(path); });
  CAPTURE(message);
  CHECK(contains(message, path));
  CHECK(contains(message, "corrupt gzip data"));
}
