#include "diagnosis/causes/request_network.h"

#include <utility>
#include <vector>

#include "bpf/events.h"
#include "diagnosis/causes/network.h"
#include "diagnosis/event_window.h"
#include "diagnosis/engine_series.h"
#include "tracedb/event_row.h"
#include "tracedb/op_args.h"
#include "tracedb/sqlite_handle.h"
#include "common/sanitize.h"
#include "diagnosis/request_evidence.h"

namespace causeway::requests {
namespace {

using Spans = std::vector<std::pair<int64_t, int64_t>>;

// How long before the slow part a wait may have begun and still be open in it.
constexpr int64_t kWaitLookbackNs = 10'000'000'000;
// Retransmits this close before the slow part still hold the connection's data back (the
// first RTO is 200 ms; backed off, a second).
constexpr int64_t kRetransmitLookbackNs = 1'000'000'000;

// The columns of a retransmit or a send wait as read here, from the one column list
// (tracedb/event_columns.h); their args through tcp_args() / send_wait_args() (tracedb/op_args.h).
constexpr EventColumns<10> kNetworkEventColumns{{EventCol::ts_ns, EventCol::dur_ns, EventCol::tid, EventCol::op_id,
                                                 EventCol::a0, EventCol::a1, EventCol::a2, EventCol::a3, EventCol::a4,
                                                 EventCol::a5}};

// The time thread tid slept (switched out in a sleeping state until its next switch-in)
// inside [a, b]; nullopt when the session has no context switches to tell.
std::optional<Spans> slept(sqlite3* db, int64_t sid, uint32_t tid, int64_t a, int64_t b) {
  auto any = Statement::prepare(db, "SELECT 1 FROM sched WHERE session_id = ?1 LIMIT 1");
  if (!any) return std::nullopt;
  any->bind(1, sid);
  if (any->step() != SQLITE_ROW) return std::nullopt;
  Spans out;
  auto st = Statement::prepare(db, "SELECT o.ts_ns, (SELECT min(i.ts_ns) FROM sched i WHERE i.session_id = ?1 AND i.next_tid = ?2 "
                                   "AND i.ts_ns > o.ts_ns) FROM sched o WHERE o.session_id = ?1 AND o.prev_tid = ?2 AND "
                                   "o.prev_state != 0 AND o.ts_ns >= ?3 AND o.ts_ns < ?4");
  if (!st) return out;
  st->bind(1, sid);
  st->bind(2, int64_t{tid});
  st->bind(3, a);
  st->bind(4, b);
  while (st->step() == SQLITE_ROW) out.emplace_back(st->col_int(0), st->col_null(1) ? b : std::min(b, st->col_int(1)));
  return out;
}

// TCP retransmits to `peer` in [from, to].
int64_t retransmits_to(sqlite3* db, int64_t sid, const std::string& peer, int64_t from, int64_t to) {
  if (peer.empty()) return 0;
  auto ids = event_ids_for_window(db, sid, from, to);
  if (!ids || ids->empty()) return 0;
  auto st = Statement::prepare(db, "SELECT " + kNetworkEventColumns.sql() +
                                       " FROM events WHERE session_id = ?1 AND id BETWEEN ?2 AND ?3 "
                                       "AND op_id IN (?4, ?5) AND ts_ns BETWEEN ?6 AND ?7");
  if (!st) return 0;
  st->bind(1, sid);
  st->bind(2, ids->lo);
  st->bind(3, ids->hi);
  st->bind(4, int64_t{CW_OP_TCP_RETRANSMIT});
  st->bind(5, int64_t{CW_OP_TCP_RETRANSMIT6});
  st->bind(6, from);
  st->bind(7, to);
  int64_t n = 0;
  while (st->step() == SQLITE_ROW) {
    const CallRecord r = decode_event(st->get(), kNetworkEventColumns).call;
    const bool v6 = r.op == CW_OP_TCP_RETRANSMIT6;
    const TcpArgs t = v6 ? tcp6_args(r) : tcp_args(r);
    n += endpoint_text({v6, t.daddr_hi, t.daddr, t.dport}) == peer;
  }
  return n;
}

}  // namespace

std::optional<CauseClaim> network_claim(sqlite3* db, int64_t sid, const Connection& conn, int64_t from, int64_t to) {
  if (to <= from || conn.fd < 0) return std::nullopt;
  auto ids = event_ids_for_window(db, sid, from - kWaitLookbackNs, to);
  if (!ids || ids->empty()) return std::nullopt;
  auto st = Statement::prepare(db, "SELECT " + kNetworkEventColumns.sql() +
                                       " FROM events WHERE session_id = ?1 AND id BETWEEN ?2 AND ?3 AND op_id = ?4 AND pid = ?5 AND " +
                                       CW_ARG_COLUMN("fd", arg_layout::send_wait) + " = ?6 AND ts_ns <= ?8 AND ts_ns + dur_ns >= ?7");
  if (!st) return std::nullopt;
  st->bind(1, sid);
  st->bind(2, ids->lo);
  st->bind(3, ids->hi);
  st->bind(4, int64_t{CW_OP_SOCK_SEND_WAIT});
  st->bind(5, int64_t{conn.server_pid});
  st->bind(6, int64_t{conn.fd});
  st->bind(7, from);
  st->bind(8, to);
  Spans waits;
  int64_t eagain = 0, short_writes = 0, blocked = 0, first = to;
  while (st->step() == SQLITE_ROW) {
    const CallRecord e = decode_event(st->get(), kNetworkEventColumns).call;
    const SendWaitArgs w = send_wait_args(e);
    const int64_t a = e.ts_ns, b = e.ts_ns + e.dur_ns;
    if (w.blocking) {
      // A blocking write: the thread's sleep in it, not a preemption (cpu_contention's).
      auto s = slept(db, sid, e.tid, a, b);
      if (s && s->empty()) continue;
      if (s) waits.insert(waits.end(), s->begin(), s->end());
      else waits.emplace_back(a, b);
      ++blocked;
    } else {
      waits.emplace_back(a, b);
    }
    eagain += w.eagain;
    short_writes += w.short_writes;
    first = std::min(first, a);
  }
  const double lost = covered_ns(std::move(waits), from, to);
  if (lost <= 0) return std::nullopt;
  Culprit culprit{.pid = conn.server_pid,
                  .comm = conn.comm,
                  .peer = conn.peer,
                  .share_kind = ShareKind::none,
                  .retransmits = retransmits_to(db, sid, conn.peer, std::min(first, from) - kRetransmitLookbackNs, to)};
  culprit.send_waits = SendBufferWaits{eagain, short_writes, blocked};
  return CauseClaim{RequestCause::network, lost, std::move(culprit)};
}

// The first of the request's connections (one, unless its id repeats) that waited ≥ the noise floor.
void NetworkRequestCause::find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
  for (const auto& s : ev.spans()) {
    if (s.id != part.id || s.server_pid != part.server_pid) continue;
    auto claim = network_claim(ev.db(), ev.session_id(), {part.server_pid, s.fd, s.peer, ev.comm(part.server_pid)}, part.from_ns,
                               part.to_ns);
    if (claim && claim->lost_ns >= kMinRequestClaimNs) {
      out.push_back(std::move(*claim));
      return;
    }
  }
}

RequestChainWords NetworkRequestCause::chain_words(const Culprit& k) {
  const SendBufferWaits w = k.send_waits.value_or(SendBufferWaits{});
  return {"; the server's writes to " + sanitize_untrusted(k.peer.value_or(""), 64) + " waited on a full send buffer: " +
              std::to_string(w.eagain) + " EAGAIN, " + std::to_string(w.short_writes) + " short writes, " +
              std::to_string(w.blocked_writes) + " blocking writes, " + std::to_string(k.retransmits.value_or(0)) +
              " TCP retransmits",
          {}};
}

const char* NetworkRequestCause::recommendation([[maybe_unused]] const Culprit& culprit) {
  if (culprit.retransmits.value_or(0) > 0)
    return "The responses backed up in the send buffer while TCP retransmitted to the client: the link drops "
           "packets, or the client's receive buffer overflowed. Check the path to the peer (NIC error counters with "
           "ethtool -S, MTU, a congested or lossy proxy) and the client's read loop; the engine itself was not slow.";
  return "The client does not read its stream as fast as the server writes it (its receive window closed and the "
         "server's send buffer filled): fix or time out the slow reader (a write timeout in the server or its proxy), "
         "and keep it from holding a batch slot; the engine itself was not slow.";
}

}  // namespace causeway::requests
