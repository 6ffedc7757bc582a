#include "diagnosis/causes/network.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include <arpa/inet.h>
#include <sys/socket.h>

#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "bpf/events.h"
#include "common/argmax.h"
#include "tracedb/op_args.h"

namespace causeway {
namespace {

using Endpoint = Network::Endpoint;

// The local and remote ends of a retransmit event (tracedb/op_catalog.cpp arg layouts).
TcpArgs tcp_of(const Ev& r) { return r.op == CW_OP_TCP_RETRANSMIT6 ? tcp6_args(r) : tcp_args(r); }

std::pair<Endpoint, Endpoint> ends_of(const Ev& r) {
  const bool v6 = r.op == CW_OP_TCP_RETRANSMIT6;
  const TcpArgs t = tcp_of(r);
  return {{v6, t.saddr_hi, t.saddr, t.sport}, {v6, t.daddr_hi, t.daddr, t.dport}};
}

// The peer with the most retransmits, or null.
const std::pair<const Endpoint, Network::Evidence::Peer>* top_peer(const Network::Evidence& e) {
  return argmax_by(e.peers, [](const auto& kv) { return kv.second.retransmits; });
}

}  // namespace

std::string endpoint_text(const Endpoint& e) {
  char addr[INET6_ADDRSTRLEN] = {};
  if (e.v6) {
    unsigned char b[16];
    for (int i = 0; i < 8; ++i) {
      b[i] = static_cast<unsigned char>(static_cast<uint64_t>(e.hi) >> (56 - 8 * i));
      b[8 + i] = static_cast<unsigned char>(static_cast<uint64_t>(e.lo) >> (56 - 8 * i));
    }
    ::inet_ntop(AF_INET6, b, addr, sizeof addr);
    return "[" + std::string(addr) + "]:" + std::to_string(e.port);
  }
  std::snprintf(addr, sizeof addr, "%u.%u.%u.%u", static_cast<unsigned>((e.lo >> 24) & 255),
                static_cast<unsigned>((e.lo >> 16) & 255), static_cast<unsigned>((e.lo >> 8) & 255),
                static_cast<unsigned>(e.lo & 255));
  return std::string(addr) + ":" + std::to_string(e.port);
}

Finding Network::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  const auto* p = top_peer(e);
  double share = p ? static_cast<double>(p->second.calls) / static_cast<double>(a.calls) : 0;
  f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + "; TCP retransmits" +
              (p ? " to " + endpoint_text(p->first) : std::string()) + " on this job's sockets during " + pct(share) +
              " of them — the network path, not this host, stretched the calls";
  if (p)
    f.culprit = Culprit{.peer = endpoint_text(p->first), .share_kind = ShareKind::slow_calls,
                        .share = std::round(share * 1000) / 1000, .retransmits = p->second.retransmits};
  f.evidence.push_back(std::to_string(e.retransmits) +
                       " TCP retransmits on sockets of the process or its communicator's local ranks within the slow calls "
                       "(from 10 ms before)" +
                       (e.by_owner > 0 ? "; " + std::to_string(e.by_owner) +
                                             " of them matched to the socket's owner by the collector (the kernel retransmits "
                                             "from a timer, on whatever task runs)"
                                       : std::string()));
  for (const auto& [ep, peer] : e.peers)
    if (p && !(ep == p->first))
      f.evidence.push_back(std::to_string(peer.retransmits) + " retransmits to " + endpoint_text(ep) + " in " +
                           std::to_string(peer.calls) + " slow calls");
  f.evidence.push_back(
      "the calling thread stayed on-CPU or asleep without a host cause: no preemption, D-state or lock wait explains the time");
  return f;
}

std::string Network::fix(const ChainView&, const Evidence& e) {
  const auto* p = top_peer(e);
  return "Check the path to " + (p ? endpoint_text(p->first) : std::string("the peer node")) +
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
  std::set<Endpoint> seen;  // peers already counted for this call
  for (const Ev* r : hits) {
    const auto [local, peer] = ends_of(*r);
    Evidence::Peer& p = ev.peers[peer];
    if (seen.insert(peer).second) ++p.calls;
    ++p.retransmits;
    ++ev.retransmits;
    const bool owner = tcp_of(*r).sock_owner;  // pid is the socket's, not the running task's
    if (owner) ++ev.by_owner;
    items.push_back({r->ts, "net", "TCP retransmit " + endpoint_text(local) + " -> " + endpoint_text(peer) + " on a socket of " +
                                       cx.s.comm_of(r->pid) + " (pid " + std::to_string(r->pid) + ")" +
                                       (owner ? "" : " (the task running at the retransmit; the socket's owner was not known)")});
  }
  add_sample(c, w.excess, std::move(items));
  return true;
}

}  // namespace causeway
