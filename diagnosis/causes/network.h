// network: TCP retransmits on the sockets of the process or of its communicator's local ranks
// during the slow calls (attributed to each socket's owner by the collector, IPv4 and IPv6).
// Culprit: the peer address:port.
#pragma once

#include <cstdint>
#include <compare>
#include <map>
#include <string>
#include <utility>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // diagnosis/chunk_context.h
struct Slow;
struct Ev;

struct Network {
  static constexpr Cause id = Cause::network;
  static constexpr std::string_view name = "network";
  // A remote endpoint: an IPv4 address (host order, in lo) or an IPv6 one (hi, lo: its first
  // and last 8 bytes as big-endian integers, the layout of op tcp_retransmit6), and a port.
  struct Endpoint {
    bool v6 = false;
    int64_t hi = 0, lo = 0;
    int64_t port = 0;
    auto operator<=>(const Endpoint&) const = default;
  };
  struct Evidence {
    int64_t retransmits = 0;  // by the communicator's local ranks within the slow calls
    int64_t by_owner = 0;     // of those, attributed to the socket's owner (not whichever task ran)
    struct Peer {
      int64_t calls = 0;        // slow calls it had retransmits in
      int64_t retransmits = 0;
    };
    std::map<Endpoint, Peer> peers;  // remote endpoint -> retransmits to it
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // Claims an outlier when the process or its communicator's ranks retransmitted during it.
  static bool detect(ChunkContext& cx, const Slow& w);
};

// "10.0.3.12:43211", "[fd00::12]:43211"
std::string endpoint_text(const Network::Endpoint& e);

}  // namespace causeway
