#include "diagnosis/causes/request_d_state.h"

#include <algorithm>

#include "common/argmax.h"
#include "diagnosis/event_window.h"
#include "bpf/events.h"
#include "diagnosis/engine_series.h"
#include "tracedb/event_row.h"
#include "tracedb/op_args.h"
#include "tracedb/sqlite_handle.h"
#include "diagnosis/causes/request_cause_util.h"
#include "diagnosis/request_evidence.h"

namespace causeway::requests {
namespace {

constexpr int64_t kTaskUninterruptible = 2;
// How far back a D wait may start, and a block request be issued, before the slow part.
constexpr int64_t kDStateLookbackNs = 2'000'000'000;
// An OOM kill this near the waits makes them memory_pressure (diagnosis/causes/memory_pressure.h).
constexpr int64_t kOomNearNs = 10'000'000'000;
// A page-allocation record at this rate is a burst (≈ 1 GiB/s of 4 KiB pages), as the
// correlator's memory_pressure takes it.
constexpr double kBurstPagesPer100ms = 25'000;

using Spans = std::vector<std::pair<int64_t, int64_t>>;

// The engine threads' D waits overlapping [from, to]: each from a switch-out in D state to
// the thread's next wake-up (or switch-in, when the wake-up was not seen).
Spans d_waits(sqlite3* db, int64_t sid, const std::string& in, int64_t from, int64_t to) {
  Spans out;
  auto st = Statement::prepare(
      db, "SELECT o.ts_ns, coalesce((SELECT min(w.ts_ns) FROM wakeups w WHERE w.session_id = ?1 AND w.tid = o.prev_tid "
          "AND w.ts_ns > o.ts_ns AND w.ts_ns <= ?3 + ?4), (SELECT min(i.ts_ns) FROM sched i WHERE i.session_id = ?1 AND "
          "i.next_tid = o.prev_tid AND i.ts_ns > o.ts_ns AND i.ts_ns <= ?3 + ?4)) FROM sched o WHERE o.session_id = ?1 "
          "AND o.ts_ns > ?2 - ?4 AND o.ts_ns < ?3 AND (o.prev_state & " + std::to_string(kTaskUninterruptible) +
          ") != 0 AND o.prev_pid IN (" + in + ")");
  if (!st) return out;
  st->bind(1, sid);
  st->bind(2, from);
  st->bind(3, to);
  st->bind(4, kDStateLookbackNs);
  while (st->step() == SQLITE_ROW) {
    const int64_t a = st->col_int(0), b = st->col_null(1) ? to : st->col_int(1);
    if (std::min(b, to) > std::max(a, from)) out.emplace_back(std::max(a, from), std::min(b, to));
  }
  return out;
}

// A block request or a page allocation as the claims read it: its span, whose it was, and the
// row its args are read from (block_args, page_alloc_args: tracedb/op_args.h).
struct HostEvent {
  int64_t ts, end;
  uint32_t pid;
  CallRecord row;
};
constexpr EventColumns<5> kHostEventColumns{{EventCol::ts_ns, EventCol::dur_ns, EventCol::pid, EventCol::op_id, EventCol::a0}};

std::vector<HostEvent> host_events(sqlite3* db, int64_t sid, uint16_t op, int64_t from, int64_t to) {
  std::vector<HostEvent> out;
  auto ids = event_ids_for_window(db, sid, from, to);
  if (!ids || ids->empty()) return out;
  auto st = Statement::prepare(db, "SELECT " + kHostEventColumns.sql() +
                                       " FROM events WHERE session_id = ?1 AND id "
                                       "BETWEEN ?2 AND ?3 AND op_id = ?4 AND ts_ns <= ?6 AND ts_ns + dur_ns >= ?5");
  if (!st) return out;
  st->bind(1, sid);
  st->bind(2, ids->lo);
  st->bind(3, ids->hi);
  st->bind(4, int64_t{op});
  st->bind(5, from);
  st->bind(6, to);
  while (st->step() == SQLITE_ROW) {
    const CallRecord e = decode_event(st->get(), kHostEventColumns).call;
    out.push_back({e.ts_ns, e.ts_ns + e.dur_ns, e.pid, e});
  }
  return out;
}

std::string comm_of(const std::map<uint32_t, std::string>& comms, uint32_t pid) {
  auto c = comms.find(pid);
  return c == comms.end() ? "" : c->second;
}

}  // namespace

std::vector<CauseClaim> d_state_claims(sqlite3* db, int64_t sid, const std::vector<uint32_t>& pids,
                                       const std::map<uint32_t, std::string>& comms, int64_t from, int64_t to) {
  std::vector<CauseClaim> out;
  const std::string in = sql_id_list(pids);
  const Spans waits = d_waits(db, sid, in, from, to);
  if (waits.empty()) return out;
  const double d_ns = covered_ns(waits, from, to);

  // Disk: the waits' time under block requests in flight, by whose behalf they were issued.
  Spans under_io;
  std::map<uint32_t, double> io_by_pid;
  for (const HostEvent& io : host_events(db, sid, CW_OP_BLOCK_RQ, from - kDStateLookbackNs, to))
    for (const auto& [a, b] : waits)
      if (double o = overlap_ns(a, b, io.ts, io.end); o > 0) {
        under_io.emplace_back(std::max(a, io.ts), std::min(b, io.end));
        io_by_pid[io.pid] += o;
      }
  const double io_ns = covered_ns(under_io, from, to);
  if (io_ns > 0) {
    // Another process's I/O first: the engine's own reads are what it asked for.
    auto is_engine = [&](uint32_t p) { return std::find(pids.begin(), pids.end(), p) != pids.end(); };
    const std::pair<const uint32_t, double>* top = nullptr;
    for (const auto& kv : io_by_pid)
      if (!is_engine(kv.first) && (!top || kv.second > top->second)) top = &kv;
    const bool own = top == nullptr;
    if (own)
      for (const auto& kv : io_by_pid)
        if (!top || kv.second > top->second) top = &kv;
    out.push_back({RequestCause::io_contention, io_ns,
                   Culprit{.pid = top->first,
                           .comm = comm_of(comms, top->first),
                           .share_kind = ShareKind::overlap,
                           .share = std::min(1.0, top->second / d_ns),
                           .own_io = own}});
  }

  // Memory: the rest of the D time, when pages were allocated in bursts or the OOM killer ran.
  const double rest = d_ns - io_ns;
  if (rest <= 0) return out;
  std::map<uint32_t, int64_t> pages;
  bool burst = false;
  for (const HostEvent& p : host_events(db, sid, CW_OP_PAGE_ALLOC, from - kDStateLookbackNs, to)) {
    bool during = false;
    for (const auto& [a, b] : waits) during = during || overlap_ns(a, b, p.ts, p.end) > 0;
    if (!during) continue;
    const int64_t n_pages = page_alloc_args(p.row).pages;
    pages[p.pid] += n_pages;
    burst = burst || static_cast<double>(n_pages) * 1e8 / static_cast<double>(std::max<int64_t>(p.end - p.ts, 1)) >= kBurstPagesPer100ms;
  }
  const auto ooms = host_events(db, sid, CW_OP_OOM_KILL, from - kOomNearNs, to + kOomNearNs);
  if (!burst && ooms.empty()) return out;
  uint32_t top = 0;
  int64_t top_pages = -1;
  if (const auto* most = argmax_by(pages, [](const auto& e) { return e.second; })) top = most->first, top_pages = most->second;
  if (top_pages < 0 && !ooms.empty()) top = ooms.front().pid, top_pages = 0;
  Culprit culprit{.pid = top, .comm = comm_of(comms, top), .share_kind = ShareKind::none};
  culprit.pages = top_pages;
  out.push_back({RequestCause::memory_pressure, rest, std::move(culprit)});
  return out;
}

void IoContentionRequestCause::find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
  for (auto& c : d_state_claims(ev.db(), ev.session_id(), ev.engine_pids(part.server_pid), ev.comms(), part.from_ns, part.to_ns))
    out.push_back(std::move(c));
}

const char* IoContentionRequestCause::recommendation([[maybe_unused]] const Culprit& culprit) {
  return "The engine's threads waited on the disk while serving: move the culprit's I/O off the engine's disk or "
         "throttle it (ionice -c3, a cgroup io.max), and keep model weights and caches off a busy disk.";
}

const char* MemoryPressureRequestCause::recommendation([[maybe_unused]] const Culprit& culprit) {
  return "The engine's threads stalled in memory reclaim: give the host memory headroom (limit the culprit's memory "
         "with a cgroup memory.max, or lower the engine's own CPU-memory use such as --swap-space).";
}

}  // namespace causeway::requests
