// The local IP address this machine uses to reach a given host: what a rank's Gloo sockets bind to so
// that peers on other machines can reach them (loopback when the master is local).
#pragma once

#include <cstdint>
#include <string>

namespace syncgrad::distributed {

// RendezvousError naming the host when it does not resolve or no route leads to it.
std::string local_address_towards(const std::string& host, uint16_t port);

}  // namespace syncgrad::distributed
