// TCP helpers of the distributed runtime: deadlines, resolution, listen/connect with retry, and deadline-bound
// whole-buffer I/O on non-blocking sockets (see socket.h).
#include "distributed/socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

#include "distributed/errors.h"
#include "tensor/check.h"

namespace syncgrad::distributed::net {

namespace {

// Longer timeouts are treated as "never" (and keep time_point arithmetic far from overflow).
constexpr std::chrono::milliseconds kMaxTimeout{std::chrono::hours(24 * 365 * 10)};

std::string millis_text(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

// Waits for `events` on fd until the deadline; false on timeout. EINTR restarts with the remaining time.
bool wait_for(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.poll_timeout_ms());
    if (rc > 0) return true;
    if (rc == 0) {
      if (deadline.expired()) return false;
      continue;
    }
    if (errno != EINTR) return true;  // let the following send/recv report the error
  }
}

bool is_closed_errno(int err) { return err == EPIPE || err == ECONNRESET || err == ENOTCONN; }

}  // namespace

Deadline Deadline::after(std::chrono::milliseconds timeout) {
  timeout = std::clamp(timeout, std::chrono::milliseconds(0), kMaxTimeout);
  return Deadline(Clock::now() + timeout);
}

int Deadline::poll_timeout_ms() const {
  auto left = at_ - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns the message (possibly not in buf).
  return ::strerror_r(err, buf, sizeof buf);
}

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

int Fd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string host_port(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::string to_string(const SocketAddress& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (address.family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address.storage);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port = ntohs(in->sin_port);
  } else if (address.family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    port = ntohs(in6->sin6_port);
  }
  return host_port(text, port);
}

std::vector<SocketAddress> resolve(const std::string& host, uint16_t port, bool passive, Deadline deadline,
                                   const std::string& what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  const bool wildcard = passive && (host.empty() || host == "*");
  const std::string service = std::to_string(port);
  for (;;) {
    addrinfo* list = nullptr;
    int rc = ::getaddrinfo(wildcard ? nullptr : host.c_str(), service.c_str(), &hints, &list);
    if (rc == 0) {
      std::vector<SocketAddress> out;
      for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
        SocketAddress a;
        std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
        a.length = ai->ai_addrlen;
        a.family = ai->ai_family;
        out.push_back(a);
      }
      ::freeaddrinfo(list);
      if (!out.empty()) return out;
      rc = EAI_NONAME;
    }
    if (rc == EAI_AGAIN && !deadline.expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, deadline.poll_timeout_ms())));
      continue;
    }
    const std::string reason = rc == EAI_SYSTEM ? errno_text(errno) : ::gai_strerror(rc);
    throw RendezvousError(what + ": cannot resolve host '" + host + "' (" + reason +
                          "); check the host name (MASTER_ADDR / --master-addr) and that this machine's "
                          "resolver knows it, or use a numeric address");
  }
}

Fd listen_tcp(const std::string& host, uint16_t port, const std::string& what, int backlog) {
  const std::string where = what + ": cannot serve on " + host_port(host.empty() ? "*" : host, port);
  auto addresses = resolve(host, port, /*passive=*/true, Deadline::after(std::chrono::seconds(10)), what);
  int last_error = 0;
  for (const SocketAddress& a : addresses) {
    Fd fd(::socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last_error = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a.storage), a.length) != 0 ||
        ::listen(fd.get(), backlog) != 0) {
      last_error = errno;
      SYNCGRAD_CHECK(last_error != EADDRINUSE, RendezvousError, where,
                     ": the port is already in use (another job or a previous run still holds it; choose another "
                     "MASTER_PORT or let syncgrad-launch pick a free port)");
      SYNCGRAD_CHECK(last_error != EADDRNOTAVAIL, RendezvousError, where, ": ", errno_text(last_error), " (", host,
                     " is not an address of this machine; MASTER_ADDR must name the node that serves the store, i.e. "
                     "rank 0 / the launcher)");
      continue;
    }
    return fd;
  }
  throw RendezvousError(where + ": " + errno_text(last_error));
}

uint16_t local_port(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) return 0;
  if (storage.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (storage.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

std::string peer_name(int fd) {
  SocketAddress a;
  a.length = sizeof a.storage;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.length) != 0) return "?";
  a.family = a.storage.ss_family;
  return to_string(a);
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Fd connect_with_retry(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                      const std::string& what, const std::string& hint) {
  const Deadline deadline = Deadline::after(timeout);
  const auto addresses = resolve(host, port, /*passive=*/false, deadline, what);
  auto backoff = std::chrono::milliseconds(10);
  int last_error = ETIMEDOUT;
  for (;;) {
    for (const SocketAddress& a : addresses) {
      Fd fd(::socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!fd.valid()) {
        last_error = errno;
        continue;
      }
      int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a.storage), a.length);
      // An interrupted non-blocking connect goes on in the background, like EINPROGRESS.
      if (rc != 0 && (errno == EINPROGRESS || errno == EINTR)) {
        if (!wait_for(fd.get(), POLLOUT, deadline)) {
          last_error = ETIMEDOUT;
          continue;
        }
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
      if (rc == 0) {
        set_nodelay(fd.get());
        return fd;
      }
      last_error = errno;
    }
    if (deadline.expired()) break;
    std::this_thread::sleep_for(std::min(backoff, std::chrono::milliseconds(deadline.poll_timeout_ms())));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    if (deadline.expired()) break;
  }
  throw RendezvousError(what + ": could not connect to " + host_port(host, port) + " within " + millis_text(timeout) +
                        " (last error: " + errno_text(last_error) + "); " + hint);
}

IoResult send_all(int fd, const uint8_t* data, size_t size, Deadline deadline) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::send(fd, data + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline)) return {IoStatus::kTimeout, 0};
      continue;
    }
    if (n < 0 && is_closed_errno(errno)) return {IoStatus::kClosed, errno};
    return {IoStatus::kError, n < 0 ? errno : EIO};
  }
  return {};
}

IoResult recv_exact(int fd, uint8_t* data, size_t size, Deadline deadline) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::recv(fd, data + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return {IoStatus::kClosed, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(fd, POLLIN, deadline)) return {IoStatus::kTimeout, 0};
      continue;
    }
    if (is_closed_errno(errno)) return {IoStatus::kClosed, errno};
    return {IoStatus::kError, errno};
  }
  return {};
}

}  // namespace syncgrad::distributed::net
