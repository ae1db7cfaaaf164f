// IDX reading: a byte source over a raw or gzipped file, header parsing, and one read of the payload straight
// into a u8 tensor. Errors (IOError for the file system, ValueError for content) name the file and the field.
#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <system_error>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/numel.h"
#include "tensor/ops/factories.h"

namespace syncgrad::data {

namespace {

// Sequential reads from a file that is either gzip-compressed or raw.
class ByteSource {
 public:
  explicit ByteSource(const std::string& path) : path_(path) {
    std::FILE* probe = std::fopen(path.c_str(), "rb");
    if (probe == nullptr) {
      int error_number = errno;
      throw IOError("read_idx '" + path + "': cannot open: " + std::system_category().message(error_number));
    }
    unsigned char magic[2] = {0, 0};
    size_t got = std::fread(magic, 1, 2, probe);
    gzipped_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (!gzipped_) {
      std::rewind(probe);
      raw_ = probe;
      return;
    }
    std::fclose(probe);
    gz_ = gzopen(path.c_str(), "rb");
    SYNCGRAD_CHECK(gz_ != nullptr, IOError, "read_idx '", path, "': gzopen failed");
    gzbuffer(gz_, 1 << 20);
  }
  ~ByteSource() {
    if (raw_ != nullptr) std::fclose(raw_);
    if (gz_ != nullptr) gzclose(gz_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Reads up to nbytes; fewer only at the end of the data.
  size_t read(void* out, size_t nbytes) {
    if (raw_ != nullptr) {
      size_t got = std::fread(out, 1, nbytes, raw_);
      if (got < nbytes && std::ferror(raw_)) {
        int error_number = errno;
        throw IOError("read_idx '" + path_ + "': read failed: " + std::system_category().message(error_number));
      }
      return got;
    }
    size_t total = 0;
    char* bytes = static_cast<char*>(out);
    while (total < nbytes) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(nbytes - total, 1u << 30));
      int got = gzread(gz_, bytes + total, chunk);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(gz_, &code);
        throw ValueError("read_idx '" + path_ + "': corrupt gzip data: " + message);
      }
      if (got == 0) break;
      total += static_cast<size_t>(got);
    }
    return total;
  }

  const char* kind() const { return gzipped_ ? "gzipped" : "raw"; }

  // Bytes left to read in a raw file; none for a gzipped one, whose size is known only once it is inflated.
  std::optional<uint64_t> raw_bytes_left() const {
    if (raw_ == nullptr) return std::nullopt;
    long here = std::ftell(raw_);
    if (here < 0 || std::fseek(raw_, 0, SEEK_END) != 0) return std::nullopt;
    long end = std::ftell(raw_);
    std::fseek(raw_, here, SEEK_SET);
    if (end < here) return std::nullopt;
    return static_cast<uint64_t>(end - here);
  }

 private:
  std::string path_;
  bool gzipped_ = false;
  std::FILE* raw_ = nullptr;
  gzFile gz_ = nullptr;
};

uint32_t big_endian_u32(const unsigned char* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) | uint32_t{bytes[3]};
}

std::string hex32(uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

// Reads an IDX file of unsigned bytes with `ndim` dimensions into a u8 tensor of its shape.
Tensor read_idx_u8(const std::string& path, int ndim) {
  ByteSource source(path);
  const uint32_t expected_magic = 0x00000800u | static_cast<uint32_t>(ndim);
  const size_t header_bytes = 4 + 4 * static_cast<size_t>(ndim);
  unsigned char header[16];
  size_t got = source.read(header, header_bytes);
  SYNCGRAD_CHECK(got >= 4, ValueError, "read_idx '", path, "': file too short for the magic number (", got,
                 " bytes; truncated?)");
  uint32_t magic = big_endian_u32(header);
  SYNCGRAD_CHECK(magic == expected_magic, ValueError, "read_idx '", path, "': wrong magic number: expected ",
                 hex32(expected_magic), ", found ", hex32(magic), " (not an IDX file of ", ndim, "-d unsigned bytes?)");
  SYNCGRAD_CHECK(got >= header_bytes, ValueError, "read_idx '", path, "': truncated header: expected ", header_bytes,
                 " bytes, found ", got);
  Shape shape;
  for (int d = 0; d < ndim; ++d) shape.push_back(big_endian_u32(header + 4 + 4 * d));

  // Checked before allocating: a 16-byte header can promise 2^64 elements, or gigabytes the file does not have.
  size_t expected = checked_nbytes(shape, 1, "read_idx '" + path + "'");
  std::optional<uint64_t> left = source.raw_bytes_left();
  SYNCGRAD_CHECK(!left || *left >= expected, ValueError, "read_idx '", path, "' (", source.kind(),
                 "): truncated data: expected ", expected, " bytes, found ", *left);
  Tensor out = empty(shape, {.dtype = DType::u8});
  size_t found = source.read(out.data_ptr(), expected);
  SYNCGRAD_CHECK(found >= expected, ValueError, "read_idx '", path, "' (", source.kind(),
                 "): truncated data: expected ", expected, " bytes, found ", found);
  unsigned char extra;
  SYNCGRAD_CHECK(source.read(&extra, 1) == 0, ValueError, "read_idx '", path, "' (", source.kind(),
                 "): trailing data after the expected ", expected, " bytes");
  return out;
}

}  // namespace

Tensor read_idx_images(const std::string& path) { return read_idx_u8(path, 3); }

Tensor read_idx_labels(const std::string& path) { return read_idx_u8(path, 1); }

}  // namespace syncgrad::data
