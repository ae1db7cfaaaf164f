// CIFAR-10 binary reading: whole-file read, size and label checks with file/record/offset in every message.
#include "data/cifar10.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <system_error>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/join.h"

namespace syncgrad::data {
namespace {

constexpr int kNumClasses = 10;

std::string os_reason(int error_number) { return std::system_category().message(error_number); }

}  // namespace

CifarSplit read_cifar10_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int error_number = errno;
    throw IOError("read_cifar10 '" + path + "': cannot open: " + os_reason(error_number));
  }
  struct stat info {};
  if (::fstat(fileno(file), &info) != 0) {
    const int error_number = errno;
    std::fclose(file);
    throw IOError("read_cifar10 '" + path + "': cannot stat: " + os_reason(error_number));
  }
  const int64_t size = info.st_size;
  if (size == 0 || size % kCifarRecordBytes != 0) {
    std::fclose(file);
    SYNCGRAD_CHECK(size != 0, ValueError, "read_cifar10 '", path, "': the file is empty, expected records of ",
                   kCifarRecordBytes, " bytes (1 label + 3072 pixels)");
    const int64_t whole = size / kCifarRecordBytes;
    throw ValueError("read_cifar10 '" + path + "': size " + std::to_string(size) + " bytes is not a multiple of the " +
                     std::to_string(kCifarRecordBytes) + "-byte record (1 label + 3072 pixels): record " +
                     std::to_string(whole) + " at offset " + std::to_string(whole * kCifarRecordBytes) + " has " +
                     std::to_string(size - whole * kCifarRecordBytes) + " bytes, expected " +
                     std::to_string(kCifarRecordBytes) + " (truncated or not a CIFAR-10 binary file?)");
  }
  const int64_t n = size / kCifarRecordBytes;
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  const size_t got = std::fread(bytes.data(), 1, bytes.size(), file);
  const int error_number = errno;
  std::fclose(file);
  SYNCGRAD_CHECK(got == bytes.size(), IOError, "read_cifar10 '", path, "': read ", got, " of ", size,
                 " bytes: ", os_reason(error_number));
  CifarSplit split{empty({n, 3, 32, 32}, {.dtype = DType::u8}), empty({n}, {.dtype = DType::i64})};
  auto* pixels = split.images.data_ptr<uint8_t>();
  auto* labels = split.labels.data_ptr<int64_t>();
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* record = bytes.data() + r * kCifarRecordBytes;
    SYNCGRAD_CHECK(record[0] < kNumClasses, ValueError, "read_cifar10 '", path, "': record ", r, " (offset ",
                   r * kCifarRecordBytes, "): label byte is ", std::to_string(record[0]),
                   ", expected a class index 0..9 (mislabelled, or not a CIFAR-10 file: CIFAR-100 has 2 label bytes)");
    labels[r] = record[0];
    std::copy(record + 1, record + kCifarRecordBytes, pixels + r * kCifarImageBytes);
  }
  return split;
}

std::vector<std::string> cifar10_files(bool train) {
  if (!train) return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"};
}

CifarSplit load_cifar10(const std::string& dir, bool train) {
  std::vector<Tensor> images, labels;
  for (const std::string& name : cifar10_files(train)) {
    const std::string path = dir + "/" + name;
    struct stat info {};
    SYNCGRAD_CHECK(::stat(path.c_str(), &info) == 0, IOError, "load_cifar10: '", path,
                   "' does not exist; expected the ", (train ? "train" : "test"),
                   " files of the binary version (cifar-10-batches-bin: data_batch_1..5.bin, test_batch.bin)");
    CifarSplit part = read_cifar10_file(path);
    images.push_back(part.images);
    labels.push_back(part.labels);
  }
  if (images.size() == 1) return {images[0], labels[0]};
  return {raw::cat(images, 0), raw::cat(labels, 0)};
}

Cifar10Dataset::Cifar10Dataset(const std::string& dir, bool train) : split_(load_cifar10(dir, train)) {}

Cifar10Dataset::Cifar10Dataset(CifarSplit split) : split_(std::move(split)) {
  const bool ok = split_.images.defined() && split_.labels.defined() && split_.images.dtype() == DType::u8 &&
                  split_.labels.dtype() == DType::i64 && split_.images.is_contiguous() && split_.images.dim() == 4 &&
                  split_.images.sizes() == Shape{split_.labels.size(0), 3, 32, 32} && split_.labels.dim() == 1;
  SYNCGRAD_CHECK(ok, ShapeError, "Cifar10Dataset: images must be (N, 3, 32, 32) u8 and labels (N) i64 with the same N");
}

int64_t Cifar10Dataset::size() const { return split_.labels.size(0); }

Example Cifar10Dataset::get(int64_t index) const {
  check_index(index);
  Tensor image = empty({3, 32, 32});  // (3, 32, 32) f32 in [0, 1]
  const uint8_t* src = split_.images.data_ptr<uint8_t>() + index * kCifarImageBytes;
  float* dst = image.data_ptr<float>();
  for (int64_t i = 0; i < kCifarImageBytes; ++i) dst[i] = static_cast<float>(src[i]) * (1.0f / 255.0f);
  return {image, scalar_tensor(split_.labels.data_ptr<int64_t>()[index], DType::i64, kCPU)};
}

}  // namespace syncgrad::data
