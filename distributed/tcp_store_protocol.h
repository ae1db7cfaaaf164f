// The TCPStore wire protocol (internal to tcp_store*.cpp): message framing, limits and encoders/decoders.
//
// Every message, in both directions, is a frame:
//   u32 N        body length in bytes (N >= 1), little-endian
//   u8  type     first byte of the body
//   ...          N - 1 bytes of fields
// Fields: u8; u32 and i64 little-endian (i64 two's complement); str = u32 length + that many bytes;
// keys = u32 count + count x str. A body must be consumed exactly (trailing bytes are malformed).
//
// Requests (client -> server):
//   0x01 HELLO        u32 magic 'SGST', u32 version, str token    (must be the first message)
//   0x02 SET          str key, str value                          -> OK
//   0x03 GET          str key, i64 timeout_ms                     -> VALUE | TIMEOUT
//   0x04 ADD          str key, i64 delta                          -> INT | ERROR
//   0x05 COMPARE_SET  str key, str expected, str desired          -> VALUE
//   0x06 CHECK        keys                                        -> BOOL
//   0x07 DELETE       str key                                     -> BOOL
//   0x08 WAIT         keys, i64 timeout_ms                        -> OK | TIMEOUT
// Replies (server -> client):
//   0x81 HELLO_OK     u32 magic, u32 version
//   0x82 REJECTED     str reason   (then the server closes the connection)
//   0x83 OK
//   0x84 VALUE        str value
//   0x85 INT          i64 value
//   0x86 BOOL         u8 (0 or 1)
//   0x87 TIMEOUT      keys still missing when the request's timeout expired, str note (what else the
//                     server saw meanwhile: connections refused for a wrong token; may be empty)
//   0x88 ERROR        str message  (the request was well-formed but could not be applied)
//   0x89 REFUSED      str message  (the request is over one of the server's limits: key, value or total
//                     size; nothing was applied and the connection stays usable)
//
// Limits: keys and tokens at most kMaxStoreKeyBytes, values at most kMaxStoreValueBytes, key lists at most
// kMaxStoreKeysPerRequest entries. The frame header alone already bounds N by the type's largest valid body,
// so an oversized length is refused before anything is buffered. The server closes a connection on any
// malformed frame or one over these wire limits, and on any request before a valid HELLO. A frame within the
// wire limits but over the server's own (TCPStoreServerOptions) gets REFUSED as soon as its header is read,
// and its body is skipped without being buffered. A connection refused for load gets REJECTED with a reason
// starting with kBusy (the client retries). The server answers one request at a time per connection,
// parking GET/WAIT until the keys exist or their timeout expires.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "distributed/store.h"

namespace syncgrad::distributed::store_protocol {

inline constexpr uint32_t kMagic = 0x54534753;  // the bytes "SGST"
inline constexpr uint32_t kVersion = 2;
inline constexpr size_t kHeaderBytes = 5;                  // u32 length + u8 type
inline constexpr size_t kMaxMessageBytes = 4096;           // REJECTED / ERROR texts
inline constexpr const char* kWrongToken = "wrong token";  // the REJECTED reason for a bad token
inline constexpr const char* kBusy = "busy: ";  // how REJECTED reasons for load (retry later) start

enum class Type : uint8_t {
  kHello = 0x01,
  kSet = 0x02,
  kGet = 0x03,
  kAdd = 0x04,
  kCompareSet = 0x05,
  kCheck = 0x06,
  kDelete = 0x07,
  kWait = 0x08,
  kHelloOk = 0x81,
  kRejected = 0x82,
  kOk = 0x83,
  kValue = 0x84,
  kInt = 0x85,
  kBool = 0x86,
  kTimeout = 0x87,
  kError = 0x88,
  kRefused = 0x89,
};

// A malformed or oversized message.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The largest valid body (type byte included) of a message type; 0 for an unknown type.
size_t max_body(uint8_t type);
const char* type_name(uint8_t type);

uint32_t load_u32(const uint8_t* p);

// Builds one frame.
class Writer {
 public:
  explicit Writer(Type type);
  Writer& u8(uint8_t v);
  Writer& u32(uint32_t v);
  Writer& i64(int64_t v);
  Writer& str(const uint8_t* data, size_t size);
  Writer& str(const std::string& s) { return str(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }
  Writer& str(const Bytes& b) { return str(b.data(), b.size()); }
  Writer& keys(const std::vector<std::string>& keys);
  // The frame with its length filled in.
  Bytes finish();

 private:
  Bytes buf_;
};

// Reads the fields of one body (after the type byte); throws ProtocolError on anything malformed.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  uint8_t u8();
  uint32_t u32();
  int64_t i64();
  std::string str(size_t max_size);
  Bytes bytes(size_t max_size);
  std::vector<std::string> keys();
  // Throws unless every byte was consumed.
  void finish() const;

 private:
  const uint8_t* take(size_t n);
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace syncgrad::distributed::store_protocol
