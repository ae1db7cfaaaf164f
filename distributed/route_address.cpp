// local_address_towards: connect a UDP socket (no packet is sent) and read the address the kernel chose.
#include "distributed/route_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "distributed/errors.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

std::string local_address_towards(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  SYNCGRAD_CHECK(rc == 0 && found != nullptr, RendezvousError, "MASTER_ADDR ", host, " does not resolve (",
                 gai_strerror(rc), "); use the master's IP address or a host name every node can resolve");
  const int fd = socket(found->ai_family, SOCK_DGRAM, 0);
  std::string result;
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t length = sizeof(local);
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) != nullptr) {
      result = text;
    }
  }
  const int saved_errno = errno;
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  SYNCGRAD_CHECK(!result.empty(), RendezvousError, "no network route from this machine to MASTER_ADDR ", host, " (",
                 std::strerror(saved_errno), "); check the address or set GLOO_SOCKET_IFNAME");
  return result;
}

}  // namespace syncgrad::distributed
