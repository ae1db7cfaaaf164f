// save_safetensors: builds the JSON header in the order given and streams each tensor's host bytes into an
// AtomicFileWriter.
#include <bit>
#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/io/atomic_file.h"
#include "tensor/io/safetensors.h"
#include "tensor/io/safetensors_dtype.h"
#include "tensor/ops/copy.h"

namespace syncgrad::io {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

constexpr const char* kMetadataKey = "__metadata__";

void check_names(const std::string& path, const NamedTensors& tensors) {
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    SYNCGRAD_CHECK(name != kMetadataKey, ValueError, "save_safetensors '", path, "': '", name,
                   "' is reserved for metadata; rename the tensor");
    SYNCGRAD_CHECK(seen.insert(name).second, ValueError, "save_safetensors '", path, "': duplicate tensor name '", name,
                   "'");
    SYNCGRAD_CHECK(tensor.defined(), ValueError, "save_safetensors '", path, "': tensor '", name, "' is undefined");
  }
}

// The JSON header, space-padded so that the data starts at a multiple of 8 bytes.
std::string build_header(const std::string& path, const NamedTensors& tensors,
                         const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    uint64_t end = offset + tensor.nbytes();
    header[name] = {{"dtype", safetensors_dtype_code(tensor.dtype())},
                    {"shape", tensor.sizes()},
                    {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw ValueError("save_safetensors '" + path + "': a tensor name or metadata string is not valid UTF-8 (" +
                     e.what() + ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  check_names(path, tensors);
  std::string header = build_header(path, tensors, metadata);
  uint64_t header_length = header.size();

  AtomicFileWriter file(path);
  file.write(&header_length, sizeof(header_length));
  file.write(header.data(), header.size());
  for (const auto& [name, tensor] : tensors) {
    Tensor host = raw::to(raw::contiguous(tensor), kCPU);
    file.write(host.data_ptr(), host.nbytes());
  }
  file.commit();
}

}  // namespace syncgrad::io
