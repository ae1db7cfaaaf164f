// load_safetensors: reads the header, validates every field (lengths, JSON, dtypes, shapes against offsets,
// overlaps and gaps, duplicates), then reads each tensor's bytes straight into a new CPU tensor.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

#include "tensor/errors.h"
#include "tensor/io/safetensors.h"
#include "tensor/io/safetensors_dtype.h"
#include "tensor/numel.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::io {

namespace {

using Json = nlohmann::ordered_json;  // keeps header order, the tie-break for tensors at equal offsets
constexpr const char* kMetadataKey = "__metadata__";
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the limit of the Python/Rust reader

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin;
  uint64_t end;
};

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail_os("cannot open", errno);
    struct stat info {};
    if (::fstat(fd_, &info) != 0) fail_os("cannot stat", errno);
    size_ = static_cast<uint64_t>(info.st_size);
  }
  ~Reader() { ::close(fd_); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  uint64_t size() const { return size_; }

  void read_at(uint64_t offset, void* out, uint64_t nbytes) const {
    char* bytes = static_cast<char*>(out);
    while (nbytes > 0) {
      ssize_t got = ::pread(fd_, bytes, nbytes, static_cast<off_t>(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        fail_os("read failed", errno);
      }
      if (got == 0) invalid("unexpected end of file at byte " + std::to_string(offset) + " (truncated?)");
      bytes += got;
      offset += static_cast<uint64_t>(got);
      nbytes -= static_cast<uint64_t>(got);
    }
  }

  [[noreturn]] void invalid(const std::string& what) const {
    throw ValueError("load_safetensors '" + path_ + "': " + what);
  }

 private:
  [[noreturn]] void fail_os(const std::string& what, int error_number) const {
    throw IOError("load_safetensors '" + path_ + "': " + what + ": " + std::system_category().message(error_number));
  }

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Parses the header text; a top-level name given twice is an error (JSON parsers silently keep the last).
Json parse_header(const Reader& reader, const std::string& text) {
  std::set<std::string> names;
  auto reject_duplicates = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1) {
      std::string name = parsed.get<std::string>();
      if (!names.insert(name).second) reader.invalid("header: duplicate tensor name '" + name + "'");
    }
    return true;
  };
  Json header;
  try {
    header = Json::parse(text, reject_duplicates);
  } catch (const nlohmann::json::exception& e) {
    reader.invalid(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) reader.invalid("header: expected a JSON object, found " + std::string(header.type_name()));
  return header;
}

std::map<std::string, std::string> parse_metadata(const Reader& reader, const Json& value) {
  if (!value.is_object()) {
    reader.invalid("header field '__metadata__': expected an object of strings, found " +
                   std::string(value.type_name()));
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      reader.invalid("header field '__metadata__." + key + "': expected a string, found " +
                     std::string(item.type_name()));
    }
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

uint64_t as_unsigned(const Reader& reader, const Json& value, const std::string& field) {
  if (!value.is_number_unsigned()) {
    reader.invalid("header field '" + field + "': expected a non-negative integer, found " + value.dump());
  }
  return value.get<uint64_t>();
}

Entry parse_entry(const Reader& reader, const std::string& name, const Json& value) {
  std::string where = "tensor '" + name + "'";
  if (!value.is_object()) reader.invalid(where + ": expected an object, found " + std::string(value.type_name()));
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(field)) reader.invalid(where + ": missing field '" + field + "'");
  }
  const Json& dtype_value = value["dtype"];
  if (!dtype_value.is_string()) reader.invalid(where + ": field 'dtype' is not a string: " + dtype_value.dump());
  std::optional<DType> dtype = dtype_from_safetensors_code(dtype_value.get<std::string>());
  if (!dtype) {
    reader.invalid(where + ": unsupported dtype '" + dtype_value.get<std::string>() +
                   "' (supported: F32 F64 F16 BF16 I64 I32 U8 BOOL)");
  }

  const Json& shape_value = value["shape"];
  if (!shape_value.is_array()) reader.invalid(where + ": field 'shape' is not an array: " + shape_value.dump());
  Shape shape;
  bool too_many_elements = false;
  for (const Json& extent : shape_value) {
    uint64_t size = as_unsigned(reader, extent, name + ".shape");
    too_many_elements = too_many_elements || size > static_cast<uint64_t>(INT64_MAX);
    shape.push_back(static_cast<int64_t>(size));
  }
  int64_t numel = 0;
  too_many_elements = too_many_elements || !numel_fits(shape, numel);
  if (too_many_elements) {
    reader.invalid(where + ": shape " + shape_str(shape) + " of " + dtype_value.get<std::string>() +
                   " has 2^63 or more elements (more than int64 can count)");
  }

  const Json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    reader.invalid(where + ": field 'data_offsets' must be [begin, end], found " + offsets.dump());
  }
  uint64_t begin = as_unsigned(reader, offsets[0], name + ".data_offsets");
  uint64_t end = as_unsigned(reader, offsets[1], name + ".data_offsets");
  if (end < begin) reader.invalid(where + ": data_offsets " + offsets.dump() + " end before they begin");

  uint64_t nbytes = 0;
  bool overflow = __builtin_mul_overflow(static_cast<uint64_t>(numel), element_size(*dtype), &nbytes);
  if (overflow || nbytes != end - begin) {
    reader.invalid(where + ": shape " + shape_str(shape) + " of " + dtype_value.get<std::string>() + " needs " +
                   (overflow ? std::string("more than 2^64") : std::to_string(nbytes)) + " bytes but data_offsets " +
                   offsets.dump() + " span " + std::to_string(end - begin));
  }
  return Entry{name, *dtype, std::move(shape), begin, end};
}

// The tensors must tile the data section exactly: no overlap, no gap, nothing past its end, nothing after.
void check_layout(const Reader& reader, const std::vector<Entry>& entries, uint64_t data_bytes) {
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    std::string offsets = "[";  // appended piece by piece: g++ 12 warns falsely (-Wrestrict) on "[" + string
    offsets += std::to_string(entry.begin);
    offsets += ", ";
    offsets += std::to_string(entry.end);
    offsets += "]";
    if (entry.end > data_bytes) {
      reader.invalid("tensor '" + entry.name + "': data_offsets " + offsets + " are out of range: the data section " +
                     "has " + std::to_string(data_bytes) + " bytes (truncated?)");
    }
    if (entry.begin < covered) {
      reader.invalid("tensor '" + entry.name + "': data_offsets " + offsets + " overlap tensor '" + previous->name +
                     "' (which ends at " + std::to_string(covered) + ")");
    }
    if (entry.begin > covered) {
      reader.invalid("tensor '" + entry.name + "': data_offsets " + offsets + " leave a gap of " +
                     std::to_string(entry.begin - covered) + " bytes before them");
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered != data_bytes) {
    reader.invalid("the data section has " + std::to_string(data_bytes) + " bytes but the tensors cover only " +
                   std::to_string(covered));
  }
}

Tensor read_tensor(const Reader& reader, const Entry& entry, uint64_t data_start) {
  Tensor tensor = empty(entry.shape, {.dtype = entry.dtype});
  reader.read_at(data_start + entry.begin, tensor.data_ptr(), entry.end - entry.begin);
  if (entry.dtype == DType::boolean) {
    // Any non-zero byte is true; store canonical 0/1 so that C++ bool reads are well defined.
    auto* bytes = static_cast<uint8_t*>(tensor.data_ptr());
    for (int64_t i = 0; i < tensor.numel(); ++i) bytes[i] = bytes[i] != 0;
  }
  return tensor;
}

}  // namespace

SafetensorsContents load_safetensors(const std::string& path) {
  Reader reader(path);
  if (reader.size() < 8) {
    reader.invalid("file has " + std::to_string(reader.size()) +
                   " bytes, too short for the 8-byte header length (truncated?)");
  }
  uint64_t header_length = 0;
  reader.read_at(0, &header_length, sizeof(header_length));
  if (header_length > kMaxHeaderBytes) {
    reader.invalid("header length " + std::to_string(header_length) + " exceeds the limit of " +
                   std::to_string(kMaxHeaderBytes) + " bytes (not a safetensors file?)");
  }
  if (header_length > reader.size() - 8) {
    reader.invalid("header length " + std::to_string(header_length) + " is larger than the " +
                   std::to_string(reader.size() - 8) + " bytes that follow it (truncated?)");
  }
  std::string text(header_length, '\0');
  reader.read_at(8, text.data(), header_length);
  Json header = parse_header(reader, text);

  SafetensorsContents contents;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      contents.metadata = parse_metadata(reader, value);
    } else {
      entries.push_back(parse_entry(reader, name, value));
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t data_start = 8 + header_length;
  check_layout(reader, entries, reader.size() - data_start);

  contents.tensors.reserve(entries.size());
  for (const Entry& entry : entries) contents.tensors.emplace_back(entry.name, read_tensor(reader, entry, data_start));
  return contents;
}

}  // namespace syncgrad::io
