// Encoders, decoders and per-type size limits of the TCPStore wire protocol (tcp_store_protocol.h).
#include "distributed/tcp_store_protocol.h"

#include <utility>

#include "distributed/tcp_store.h"
#include "tensor/check.h"

namespace syncgrad::distributed::store_protocol {

namespace {

constexpr size_t kStr = 4;  // length prefix
constexpr size_t kKey = kStr + kMaxStoreKeyBytes;
constexpr size_t kValue = kStr + kMaxStoreValueBytes;
constexpr size_t kKeys = 4 + kMaxStoreKeysPerRequest * kKey;

}  // namespace

size_t max_body(uint8_t type) {
  switch (static_cast<Type>(type)) {
    case Type::kHello: return 1 + 4 + 4 + kKey;
    case Type::kSet: return 1 + kKey + kValue;
    case Type::kGet: return 1 + kKey + 8;
    case Type::kAdd: return 1 + kKey + 8;
    case Type::kCompareSet: return 1 + kKey + 2 * kValue;
    case Type::kCheck: return 1 + kKeys;
    case Type::kDelete: return 1 + kKey;
    case Type::kWait: return 1 + kKeys + 8;
    case Type::kHelloOk: return 1 + 4 + 4;
    case Type::kRejected: return 1 + kStr + kMaxMessageBytes;
    case Type::kOk: return 1;
    case Type::kValue: return 1 + kValue;
    case Type::kInt: return 1 + 8;
    case Type::kBool: return 1 + 1;
    case Type::kTimeout: return 1 + kKeys + kStr + kMaxMessageBytes;
    case Type::kError: return 1 + kStr + kMaxMessageBytes;
    case Type::kRefused: return 1 + kStr + kMaxMessageBytes;
  }
  return 0;
}

const char* type_name(uint8_t type) {
  switch (static_cast<Type>(type)) {
    case Type::kHello: return "HELLO";
    case Type::kSet: return "SET";
    case Type::kGet: return "GET";
    case Type::kAdd: return "ADD";
    case Type::kCompareSet: return "COMPARE_SET";
    case Type::kCheck: return "CHECK";
    case Type::kDelete: return "DELETE";
    case Type::kWait: return "WAIT";
    case Type::kHelloOk: return "HELLO_OK";
    case Type::kRejected: return "REJECTED";
    case Type::kOk: return "OK";
    case Type::kValue: return "VALUE";
    case Type::kInt: return "INT";
    case Type::kBool: return "BOOL";
    case Type::kTimeout: return "TIMEOUT";
    case Type::kError: return "ERROR";
    case Type::kRefused: return "REFUSED";
  }
  return "unknown";
}

uint32_t load_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

Writer::Writer(Type type) {
  buf_.resize(4);
  buf_.push_back(static_cast<uint8_t>(type));
}

Writer& Writer::u8(uint8_t v) {
  buf_.push_back(v);
  return *this;
}

Writer& Writer::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return *this;
}

Writer& Writer::i64(int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<uint8_t>(u >> (8 * i)));
  return *this;
}

Writer& Writer::str(const uint8_t* data, size_t size) {
  u32(static_cast<uint32_t>(size));
  buf_.insert(buf_.end(), data, data + size);
  return *this;
}

Writer& Writer::keys(const std::vector<std::string>& keys) {
  u32(static_cast<uint32_t>(keys.size()));
  for (const std::string& k : keys) str(k);
  return *this;
}

Bytes Writer::finish() {
  const auto n = static_cast<uint32_t>(buf_.size() - 4);
  for (int i = 0; i < 4; ++i) buf_[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  return std::move(buf_);
}

const uint8_t* Reader::take(size_t n) {
  SYNCGRAD_CHECK(static_cast<size_t>(end_ - p_) >= n, ProtocolError, "message ends inside a field");
  const uint8_t* at = p_;
  p_ += n;
  return at;
}

uint8_t Reader::u8() { return *take(1); }

uint32_t Reader::u32() { return load_u32(take(4)); }

int64_t Reader::i64() {
  const uint8_t* p = take(8);
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u |= uint64_t{p[i]} << (8 * i);
  return static_cast<int64_t>(u);
}

std::string Reader::str(size_t max_size) {
  const uint32_t n = u32();
  SYNCGRAD_CHECK(n <= max_size, ProtocolError, "field of ", n, " bytes exceeds the limit of ", max_size);
  const uint8_t* p = take(n);
  return std::string(reinterpret_cast<const char*>(p), n);
}

Bytes Reader::bytes(size_t max_size) {
  const uint32_t n = u32();
  SYNCGRAD_CHECK(n <= max_size, ProtocolError, "value of ", n, " bytes exceeds the limit of ", max_size);
  const uint8_t* p = take(n);
  return Bytes(p, p + n);
}

std::vector<std::string> Reader::keys() {
  const uint32_t count = u32();
  SYNCGRAD_CHECK(count <= kMaxStoreKeysPerRequest, ProtocolError, count, " keys exceed the limit of ",
                 kMaxStoreKeysPerRequest);
  // Each key takes at least its 4-byte length: a count larger than the body allows is malformed.
  SYNCGRAD_CHECK(count <= static_cast<size_t>(end_ - p_) / 4, ProtocolError, "key count larger than the message");
  std::vector<std::string> out;
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) out.push_back(str(kMaxStoreKeyBytes));
  return out;
}

void Reader::finish() const {
  SYNCGRAD_CHECK(p_ == end_, ProtocolError, end_ - p_, " unexpected bytes after the last field");
}

}  // namespace syncgrad::distributed::store_protocol
