// The safetensors checkpoint format, byte-compatible with the Python `safetensors` library: an 8-byte
// little-endian header length N, N bytes of JSON ({name: {dtype, shape, data_offsets: [begin, end]}, optional
// "__metadata__": {string: string}}) padded with spaces to a multiple of 8, then the raw little-endian data.
// Supported dtypes: F32 F64 F16 BF16 I64 I32 U8 BOOL.
//
// Errors: IOError for operating-system failures (missing file or directory, read-only, disk full), ValueError
// for malformed content (truncated file, bad header, bad offsets, duplicates) -- each naming the file and the
// offending field.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace syncgrad::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Writes atomically (temporary file in the same directory, fsync, rename, fsync of the directory); the data
// is laid out in the order given. Non-contiguous or CUDA tensors are copied to contiguous host memory first.
// On failure the destination is never half-written and an existing file stays intact.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsContents {
  NamedTensors tensors;  // CPU, contiguous, in file order (by data offset)
  std::map<std::string, std::string> metadata;
};

// Reads and validates a whole file.
SafetensorsContents load_safetensors(const std::string& path);

// Throws one ValueError listing every name of `expected` missing from `loaded`, every unexpected name, and
// every name whose shape or dtype differs (e.g. a checkpoint of another model); `file` is named in it.
void check_state_matches(const NamedTensors& expected, const NamedTensors& loaded, const std::string& file);

}  // namespace syncgrad::io
