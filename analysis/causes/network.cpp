#include "analysis/causes/network.h"

#include <cmath>

#include "analysis/chain_view.h"

namespace causeway {
namespace {

const PartyAcc* top_peer(const ChainAcc& a) {
  const PartyAcc* p = nullptr;
  for (auto& [k, q] : a.peers)
    if (!p || q.amount > p->amount) p = &q;
  return p;
}

}  // namespace

Finding Network::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  const PartyAcc* p = top_peer(a);
  double share = p ? static_cast<double>(p->hits) / static_cast<double>(a.calls) : 0;
  f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + "; TCP retransmits" +
              (p ? " to " + p->label : std::string()) + " by this job's ranks during " + pct(share) +
              " of them — the network path, not this host, stretched the collectives";
  if (p) f.culprit = {{"peer", p->label}, {"retransmits", p->amount}, {"share", std::round(share * 1000) / 1000}};
  f.evidence.push_back(std::to_string(e.retransmits) +
                       " TCP retransmits by the communicator's local ranks within the slow calls (from 10 ms before)");
  f.evidence.push_back(
      "the calling thread stayed on-CPU or asleep without a host cause: no preemption, D-state or lock wait explains the time");
  return f;
}

std::string Network::fix(const ChainView& v, const Evidence&) {
  const PartyAcc* p = top_peer(v.a);
  return "Check the path to " + (p ? p->label : std::string("the peer node")) +
         ": NIC error counters (ethtool -S), MTU mismatches and switch congestion; use InfiniBand/RoCE (NCCL_IB_HCA) "
         "instead of TCP sockets where available.";
}

}  // namespace causeway
