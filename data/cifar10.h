// CIFAR-10 in its binary distribution: data_batch_1.bin .. data_batch_5.bin (train) and test_batch.bin, each a
// sequence of 3073-byte records: 1 label byte (0..9), then 3072 pixel bytes, channel-major (CHW, 3 x 32 x 32:
// 1024 red, 1024 green, 1024 blue, rows top to bottom).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "tensor/tensor.h"

namespace syncgrad::data {

inline constexpr int64_t kCifarImageBytes = 3 * 32 * 32;
inline constexpr int64_t kCifarRecordBytes = 1 + kCifarImageBytes;

struct CifarSplit {
  Tensor images;  // (N, 3, 32, 32) u8
  Tensor labels;  // (N) i64 in [0, 10)
};

// One .bin file. IOError when it cannot be opened or read; ValueError naming the file, the record, its byte
// offset and expected vs found values when the size is not a whole number of records (or zero) or a label
// byte is above 9.
CifarSplit read_cifar10_file(const std::string& path);

// The file names of a split: data_batch_1.bin .. data_batch_5.bin, or test_batch.bin.
std::vector<std::string> cifar10_files(bool train);

// The split from `dir` (the cifar-10-batches-bin directory); IOError naming a missing file and the expected
// layout.
CifarSplit load_cifar10(const std::string& dir, bool train);

// Example i: data (3, 32, 32) f32 scaled to [0, 1], target 0-dim i64. Compose with TransformDataset
// (data/transforms.h) for normalisation and augmentation.
class Cifar10Dataset : public Dataset {
 public:
  Cifar10Dataset(const std::string& dir, bool train);
  explicit Cifar10Dataset(CifarSplit split);
  int64_t size() const override;
  Example get(int64_t index) const override;

 private:
  CifarSplit split_;
};

}  // namespace syncgrad::data
