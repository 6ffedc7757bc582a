// A TCP address as the collector sees it: where a server listens (/proc/PID/net/tcp{,6}),
// where the engine-metrics scraper connects, and the text a request's peer is stored as
// ("10.0.0.2:51234", "[fe80::1]:8000"; an IPv4-mapped IPv6 address reads as IPv4).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace causeway::collector {

struct Endpoint {
  int family = 0;                   // AF_INET or AF_INET6
  std::array<uint8_t, 16> addr{};   // network order; IPv4 uses the first 4 bytes
  uint16_t port = 0;

  bool is_wildcard() const;
  // Where a client on the same host reaches a listener on this address: loopback for a
  // wildcard listener (0.0.0.0, ::), the address itself otherwise.
  Endpoint reachable() const;
  std::string text() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// A sockaddr_in / sockaddr_in6 laid out in `raw` (family, port, address at their usual
// offsets); nullopt for any other family.
std::optional<Endpoint> endpoint_from_sockaddr(const uint8_t* raw);

// One local_address field of /proc/net/tcp or tcp6: "0100007F:1F90" or 32 hex digits and a
// port. The kernel prints each 32-bit word of the address as a native integer.
std::optional<Endpoint> endpoint_from_proc_net(std::string_view field);

}  // namespace causeway::collector
