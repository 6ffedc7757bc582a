#include "collector/endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace causeway::collector {
namespace {

constexpr std::array<uint8_t, 12> kMappedPrefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool parse_hex(std::string_view s, uint32_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

bool Endpoint::is_wildcard() const {
  const size_t n = family == AF_INET ? 4 : 16;
  return std::all_of(addr.begin(), addr.begin() + static_cast<std::ptrdiff_t>(n), [](uint8_t b) { return b == 0; });
}

Endpoint Endpoint::reachable() const {
  if (!is_wildcard()) return *this;
  Endpoint e = *this;
  e.addr = {};
  if (family == AF_INET) {
    e.addr[0] = 127;
    e.addr[3] = 1;
  } else {
    e.addr[15] = 1;
  }
  return e;
}

std::string Endpoint::text() const {
  char buf[INET6_ADDRSTRLEN] = {};
  const std::string port_text = ":" + std::to_string(port);
  if (family == AF_INET) return inet_ntop(AF_INET, addr.data(), buf, sizeof(buf)) ? buf + port_text : std::string();
  if (family != AF_INET6) return {};
  if (std::equal(kMappedPrefix.begin(), kMappedPrefix.end(), addr.begin()))
    return inet_ntop(AF_INET, addr.data() + 12, buf, sizeof(buf)) ? buf + port_text : std::string();
  return inet_ntop(AF_INET6, addr.data(), buf, sizeof(buf)) ? "[" + std::string(buf) + "]" + port_text : std::string();
}

std::optional<Endpoint> endpoint_from_sockaddr(const uint8_t* raw) {
  sa_family_t family = 0;
  std::memcpy(&family, raw, sizeof(family));
  Endpoint e;
  e.family = family;
  uint16_t port_be = 0;
  std::memcpy(&port_be, raw + offsetof(sockaddr_in, sin_port), sizeof(port_be));
  e.port = ntohs(port_be);
  if (family == AF_INET) std::memcpy(e.addr.data(), raw + offsetof(sockaddr_in, sin_addr), 4);
  else if (family == AF_INET6) std::memcpy(e.addr.data(), raw + offsetof(sockaddr_in6, sin6_addr), 16);
  else return std::nullopt;
  return e;
}

std::optional<Endpoint> endpoint_from_proc_net(std::string_view field) {
  const size_t colon = field.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view hex = field.substr(0, colon);
  uint32_t port = 0;
  if (!parse_hex(field.substr(colon + 1), port) || port > 0xffff) return std::nullopt;
  Endpoint e;
  e.port = static_cast<uint16_t>(port);
  if (hex.size() != 8 && hex.size() != 32) return std::nullopt;
  e.family = hex.size() == 8 ? AF_INET : AF_INET6;
  for (size_t w = 0; w * 8 < hex.size(); ++w) {
    uint32_t word = 0;
    if (!parse_hex(hex.substr(w * 8, 8), word)) return std::nullopt;
    std::memcpy(e.addr.data() + w * 4, &word, 4);  // native order, as the kernel printed it
  }
  return e;
}

}  // namespace causeway::collector
