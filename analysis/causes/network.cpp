#include "analysis/causes/network.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "analysis/chain_view.h"
#include "analysis/chunk_context.h"

namespace causeway {
namespace {

std::string ipv4(int64_t a) {
  char b[32];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", static_cast<unsigned>((a >> 24) & 255), static_cast<unsigned>((a >> 16) & 255),
                static_cast<unsigned>((a >> 8) & 255), static_cast<unsigned>(a & 255));
  return b;
}


std::string peer_label(const std::pair<int64_t, int64_t>& peer) { return ipv4(peer.first) + ":" + std::to_string(peer.second); }

// The peer with the most retransmits, or null.
const std::pair<const std::pair<int64_t, int64_t>, Network::Evidence::Peer>* top_peer(const Network::Evidence& e) {
  const std::pair<const std::pair<int64_t, int64_t>, Network::Evidence::Peer>* p = nullptr;
  for (const auto& kv : e.peers)
    if (!p || kv.second.retransmits > p->second.retransmits) p = &kv;
  return p;
}

}  // namespace

Finding Network::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  const auto* p = top_peer(e);
  double share = p ? static_cast<double>(p->second.calls) / static_cast<double>(a.calls) : 0;
  f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + "; TCP retransmits" +
              (p ? " to " + peer_label(p->first) : std::string()) + " by this job's ranks during " + pct(share) +
              " of them — the network path, not this host, stretched the collectives";
  if (p)
    f.culprit = {{"peer", peer_label(p->first)}, {"retransmits", p->second.retransmits},
                 {"share", std::round(share * 1000) / 1000}};
  f.evidence.push_back(std::to_string(e.retransmits) +
                       " TCP retransmits by the communicator's local ranks within the slow calls (from 10 ms before)");
  f.evidence.push_back(
      "the calling thread stayed on-CPU or asleep without a host cause: no preemption, D-state or lock wait explains the time");
  return f;
}

std::string Network::fix(const ChainView&, const Evidence& e) {
  const auto* p = top_peer(e);
  return "Check the path to " + (p ? peer_label(p->first) : std::string("the peer node")) +
         ": NIC error counters (ethtool -S), MTU mismatches and switch congestion; use InfiniBand/RoCE (NCCL_IB_HCA) "
         "instead of TCP sockets where available.";
}

bool Network::detect(ChunkContext& cx, const Slow& w) {
  const Ev& e = *w.e;
  // Processes sharing the communicator of this thread's last collective are in the same
  // boat: a retransmit on any of their sockets stretches the collective for all.
  std::vector<uint32_t> members{e.pid};
  int64_t since = w.from - 10'000'000;  // a retransmit shortly before the call counts
  if (auto lc = cx.last_coll.find(e.tid); lc != cx.last_coll.end()) {
    if (auto g = cx.group_of.find(lc->second); g != cx.group_of.end()) {
      for (size_t m : cx.groups[g->second].members) {
        members.push_back(cx.entries[m].pid);
        since = std::min(since, cx.entries[m].ts_ns - 10'000'000);
      }
    }
  }
  std::vector<const Ev*> hits;
  auto lo = std::lower_bound(cx.hx.retransmits.begin(), cx.hx.retransmits.end(), since,
                             [](const Ev* x, int64_t t) { return x->ts < t; });
  for (; lo != cx.hx.retransmits.end() && (*lo)->ts <= w.to; ++lo)
    if (std::find(members.begin(), members.end(), (*lo)->pid) != members.end()) hits.push_back(*lo);
  if (hits.empty()) return false;
  auto [c, ev] = chain_for<Network>(cx.s, e.pid, e.op, w.gap);
  note_call(cx.s, c, w, w.excess, w.excess);
  auto items = call_frame(cx.s, w);
  std::set<std::pair<int64_t, int64_t>> seen;  // peers already counted for this call
  for (const Ev* r : hits) {
    const std::pair<int64_t, int64_t> peer{r->a[2], r->a[3]};
    Evidence::Peer& p = ev.peers[peer];
    if (seen.insert(peer).second) ++p.calls;
    ++p.retransmits;
    ++ev.retransmits;
    items.push_back({r->ts, "net", "TCP retransmit " + ipv4(r->a[0]) + ":" + std::to_string(r->a[1]) + " -> " + peer_label(peer) +
                                       " by " + cx.s.comm_of(r->pid) + " (pid " + std::to_string(r->pid) + ")"});
  }
  add_sample(c, w.excess, std::move(items));
  return true;
}

}  // namespace causeway
