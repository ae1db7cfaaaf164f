// Internal TCP helpers shared by the store and the process groups: deadlines, owned descriptors, address
// resolution, listening and connecting with retry, and whole-buffer send/receive that never block past a
// deadline (poll on non-blocking sockets, EINTR retried, MSG_NOSIGNAL so a dead peer never raises SIGPIPE).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace syncgrad::distributed::net {

using Clock = std::chrono::steady_clock;

// A point in time operations must finish by; timeouts too large to represent mean "practically never".
class Deadline {
 public:
  static Deadline after(std::chrono::milliseconds timeout);
  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left, rounded up, clamped to [0, INT_MAX]: ready to pass to poll().
  int poll_timeout_ms() const;
  Clock::time_point at() const { return at_; }
  Deadline earlier(Deadline other) const { return at_ <= other.at_ ? *this : other; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// strerror() for errno values, thread-safe.
std::string errno_text(int err);

// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset();

 private:
  int fd_ = -1;
};

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = 0;
};

// "host:port" with IPv6 addresses in brackets.
std::string host_port(const std::string& host, uint16_t port);
// The numeric form of an address ("10.0.0.2:29500").
std::string to_string(const SocketAddress& address);

// Resolves host (a name or a numeric address) to TCP addresses; `passive` with an empty host or "*"
// gives the wildcard addresses to listen on. A name that does not resolve is a RendezvousError
// "<what>: cannot resolve host '<host>' ..."; temporary resolver failures are retried until the deadline.
std::vector<SocketAddress> resolve(const std::string& host, uint16_t port, bool passive, Deadline deadline,
                                   const std::string& what);

// A non-blocking listening socket on host:port (port 0 picks a free one), with SO_REUSEADDR. A port in
// use or an address that is not this machine's is a RendezvousError "<what>: cannot serve on host:port: ..."
// with the likely fix.
Fd listen_tcp(const std::string& host, uint16_t port, const std::string& what, int backlog = SOMAXCONN);
uint16_t local_port(int fd);
std::string peer_name(int fd);

// Connects to host:port, retrying with exponential back-off (10 ms doubling to 1 s) until the timeout.
// Returns a non-blocking socket with TCP_NODELAY. Failure is a RendezvousError "<what>: could not connect
// to host:port within <timeout> (last error: <OS text>); <hint>".
Fd connect_with_retry(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                      const std::string& what, const std::string& hint);

enum class IoStatus { kOk, kClosed, kTimeout, kError };
struct IoResult {
  IoStatus status = IoStatus::kOk;
  int error = 0;  // errno for kError
};

// Sends or receives exactly `size` bytes on a non-blocking socket before the deadline.
IoResult send_all(int fd, const uint8_t* data, size_t size, Deadline deadline);
IoResult recv_exact(int fd, uint8_t* data, size_t size, Deadline deadline);

void set_nodelay(int fd);

}  // namespace syncgrad::distributed::net
