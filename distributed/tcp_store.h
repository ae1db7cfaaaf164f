// TCPStore: a Store served over TCP by one process (rank 0 or the launcher) and used by all ranks.
// Clients connect with retry and exponential back-off until the timeout, then present the job's token
// before any other request; the server drops connections that send a wrong token, a malformed message or
// one over the length limits, and keeps serving everyone else.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "distributed/store.h"

namespace syncgrad::distributed {

// Wire limits, enforced by the server (and by the client on replies).
inline constexpr size_t kMaxStoreKeyBytes = 4096;
inline constexpr size_t kMaxStoreValueBytes = 64u << 20;  // 64 MiB
inline constexpr size_t kMaxStoreKeysPerRequest = 65536;

// The server side alone: what the launcher runs so that its ranks all connect as clients.
class TCPStoreServer {
 public:
  // Binds host:port (port 0 picks a free one) and serves on a background thread until destroyed.
  // A port already in use is a RendezvousError naming host:port with a hint.
  TCPStoreServer(const std::string& host, uint16_t port, std::string token);
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
};

class TCPStore : public Store {
 public:
  // Connects to host:port (serving it first when options.is_server). An unreachable server is a
  // RendezvousError after the timeout naming host:port; a server that rejects the token is a PeerError.
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
