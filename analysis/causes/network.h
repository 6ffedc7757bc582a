// network: TCP retransmits by the communicator's local ranks during the slow calls. Culprit: the peer.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "analysis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // analysis/chunk_context.h
struct Slow;
struct Ev;

struct Network {
  static constexpr Cause id = Cause::network;
  static constexpr std::string_view name = "network";
  struct Evidence {
    int64_t retransmits = 0;  // by the communicator's local ranks within the slow calls
    struct Peer {
      int64_t calls = 0;        // slow calls it had retransmits in
      int64_t retransmits = 0;
    };
    std::map<std::pair<int64_t, int64_t>, Peer> peers;  // (IPv4 address, port) -> retransmits to it
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // Claims an outlier when the process or its communicator's ranks retransmitted during it.
  static bool detect(ChunkContext& cx, const Slow& w);
};

}  // namespace causeway
