// Test helper for the TCPStore server tests: raw 127.0.0.1 connections that speak (or break) the wire protocol
// by hand, a server run in a forked child with its own open-file limit, and the resident memory of a process.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>

#include "distributed/socket.h"
#include "distributed/store.h"
#include "distributed/tcp_store_protocol.h"

namespace syncgrad::test::store_raw {

using Clock = std::chrono::steady_clock;
namespace proto = distributed::store_protocol;
namespace net = distributed::net;
using distributed::Bytes;

// A blocking connection to 127.0.0.1:port; invalid when the connect failed or took over 2 s (a full backlog).
inline net::Fd connect_raw(uint16_t port) {
  net::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  timeval limit{2, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return net::Fd();
  return fd;
}

// Sends every byte (best effort: a peer that closed just makes it return false).
inline bool send_raw(const net::Fd& fd, const Bytes& bytes) {
  return net::send_all(fd.get(), bytes.data(), bytes.size(), net::Deadline::after(std::chrono::seconds(10))).status ==
         net::IoStatus::kOk;
}

inline Bytes hello_frame(const std::string& token) {
  return proto::Writer(proto::Type::kHello).u32(proto::kMagic).u32(proto::kVersion).str(token).finish();
}

struct RawReply {
  int type = -1;  // -1: the connection closed or timed out first
  Bytes body;     // after the type byte
};

// Reads one reply frame within the limit.
inline RawReply read_reply(const net::Fd& fd, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  RawReply r;
  uint8_t head[proto::kHeaderBytes];
  const auto deadline = net::Deadline::after(limit);
  if (net::recv_exact(fd.get(), head, sizeof head, deadline).status != net::IoStatus::kOk) return r;
  const uint32_t n = proto::load_u32(head);
  if (n < 1 || n > (1u << 27)) return r;
  r.body.resize(n - 1);
  if (net::recv_exact(fd.get(), r.body.data(), r.body.size(), deadline).status != net::IoStatus::kOk) return r;
  r.type = head[4];
  return r;
}

// True when the peer closes the connection within the limit (whatever it sent before is discarded).
inline bool closed_by_peer(const net::Fd& fd, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = Clock::now() + limit;
  uint8_t buf[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
  }
  return false;
}

// True while the peer has neither closed the connection nor sent anything (checked without waiting).
inline bool still_open_and_silent(const net::Fd& fd) {
  pollfd p{fd.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

// This process's (or pid's) resident set size in KiB, from /proc.
inline long resident_kib(pid_t pid = 0) {
  std::ifstream status(pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status");
  std::string word;
  while (status >> word) {
    if (word == "VmRSS:") {
      long kib = -1;
      status >> kib;
      return kib;
    }
  }
  return -1;
}

}  // namespace syncgrad::test::store_raw
