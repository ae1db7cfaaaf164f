// TCPStore: a Store served over TCP by one process (rank 0 or the launcher) and used by all ranks.
// Clients connect with retry and exponential back-off until the timeout, then present the job's token
// before any other request; the server tells a client with a wrong token so and closes it, drops connections
// that send a malformed message or one over the wire limits, closes connections that send no valid opening
// message within the handshake timeout, bounds connections per peer address and in total (evicting the
// oldest unauthenticated ones first), refuses keys, values and totals over its limits with a typed error,
// and keeps serving everyone else.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "distributed/store.h"

namespace syncgrad::distributed {

// Wire limits, enforced by the server (and by the client on replies). A server's own limits
// (TCPStoreServerOptions) may be lower.
inline constexpr size_t kMaxStoreKeyBytes = 4096;
inline constexpr size_t kMaxStoreValueBytes = 64u << 20;  // 64 MiB
inline constexpr size_t kMaxStoreKeysPerRequest = 65536;

// What a TCPStoreServer accepts. The defaults are far above what real jobs use (an NCCL unique id is 128
// bytes, addresses and counters a few dozen, hundreds of ranks hold a few connections each) and low enough
// that a stray or hostile client cannot take the serving process's descriptors or memory.
struct TCPStoreServerOptions {
  // A connection that has not sent a valid HELLO within this time is closed (clients send it at once).
  std::chrono::milliseconds handshake_timeout{10'000};
  // Connections before their HELLO, from one address and in total. Past either bound the oldest such
  // connection is closed to make room, so idle connections can never lock real clients out.
  size_t max_pending_per_address = 64;
  size_t max_pending = 1024;
  // All connections, from one address and in total. Past a bound (with no connection left to evict) a new
  // connection is refused with "busy" and its client retries until its timeout. max_connections is lowered
  // at start to leave a quarter of the process's open-file limit (RLIMIT_NOFILE) to everything else.
  size_t max_connections_per_address = 4096;
  size_t max_connections = 16384;
  // Data limits; a request over one is refused with a ValueError naming the size and the limit (the
  // connection stays usable). max_key_bytes and max_value_bytes cannot exceed the wire limits above;
  // max_total_bytes counts the keys and values held.
  size_t max_key_bytes = kMaxStoreKeyBytes;
  size_t max_value_bytes = 16u << 20;   // 16 MiB
  size_t max_total_bytes = 256u << 20;  // 256 MiB
};

// The server side alone: what the launcher runs so that its ranks all connect as clients.
class TCPStoreServer {
 public:
  // Binds host:port (port 0 picks a free one) and serves on a background thread until destroyed.
  // A port already in use is a RendezvousError naming host:port with a hint; options over the wire limits
  // are a ValueError. A server listening beyond loopback without a token warns once per process on stderr.
  TCPStoreServer(const std::string& host, uint16_t port, std::string token, TCPStoreServerOptions options = {});
  ~TCPStoreServer();
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;

  uint16_t port() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct TCPStoreOptions {
  bool is_server = false;  // this process also serves the store on host:port
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;  // connect, get and wait
  std::string token;  // the job's token (the launcher passes it as SYNCGRAD_STORE_TOKEN)
  TCPStoreServerOptions server;  // the server's limits, when is_server
};

class TCPStore : public Store {
 public:
  // Connects to host:port (serving it first when options.is_server). An unreachable or persistently busy
  // server is a RendezvousError after the timeout naming host:port; so is a server that refuses the token
  // (at once: "the store at host:port refused our token; ..."). Requests over the server's limits are
  // ValueErrors naming the size and the limit. A get/wait timeout names the connections the server refused
  // for a wrong token meanwhile (a rank of this job started with another SYNCGRAD_STORE_TOKEN).
  TCPStore(const std::string& host, uint16_t port, TCPStoreOptions options = {});
  ~TCPStore() override;

  uint16_t port() const;
  const std::string& host() const;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::set;
  using Store::wait;

 private:
  struct Connection;
  std::unique_ptr<TCPStoreServer> server_;
  std::unique_ptr<Connection> connection_;
  std::string host_;
  uint16_t port_;
};

}  // namespace syncgrad::distributed
