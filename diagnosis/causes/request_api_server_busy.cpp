#include "diagnosis/causes/request_api_server_busy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "common/argmax.h"
#include "diagnosis/request_evidence.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::requests {
namespace {

// How far before the wait a thread's switch-in is looked for: a thread that went on CPU
// earlier and never left shows only its switch-out (taken as on CPU since this far back).
constexpr int64_t kApiBusyLookbackNs = 1'000'000'000;

// On-CPU time of each thread of `pid` inside [w0, w1], from its switch-ins and switch-outs.
std::map<uint32_t, int64_t> api_busy_on_cpu(sqlite3* db, int64_t session_id, uint32_t pid, int64_t w0, int64_t w1) {
  std::map<uint32_t, int64_t> on_cpu;
  auto st = Statement::prepare(db,
                               "SELECT ts_ns, prev_tid, prev_pid, next_tid, next_pid FROM sched WHERE session_id = ?1 AND "
                               "ts_ns >= ?2 AND ts_ns <= ?3 AND (prev_pid = ?4 OR next_pid = ?4) ORDER BY ts_ns");
  if (!st) return on_cpu;
  const int64_t lo = w0 - kApiBusyLookbackNs;
  st->bind(1, session_id);
  st->bind(2, lo);
  st->bind(3, w1);
  st->bind(4, int64_t{pid});
  std::map<uint32_t, int64_t> since;  // tid → on CPU since
  std::map<uint32_t, bool> seen;
  auto add = [&](uint32_t tid, int64_t a, int64_t b) {
    const int64_t n = std::min(b, w1) - std::max(a, w0);
    if (n > 0) on_cpu[tid] += n;
  };
  while (st->step() == SQLITE_ROW) {
    const int64_t ts = st->col_int(0);
    const auto prev_tid = static_cast<uint32_t>(st->col_int(1)), next_tid = static_cast<uint32_t>(st->col_int(3));
    if (static_cast<uint32_t>(st->col_int(2)) == pid) {
      auto it = since.find(prev_tid);
      if (it != since.end()) add(prev_tid, it->second, ts), since.erase(it);
      else if (!seen[prev_tid]) add(prev_tid, lo, ts);  // on CPU since before the lookback
      seen[prev_tid] = true;
    }
    if (static_cast<uint32_t>(st->col_int(4)) == pid) {
      since[next_tid] = ts;
      seen[next_tid] = true;
    }
  }
  for (const auto& [tid, t] : since) add(tid, t, w1);
  return on_cpu;
}

std::string api_busy_thread_comm(sqlite3* db, int64_t session_id, uint32_t tid, uint32_t pid) {
  for (uint32_t id : {tid, pid}) {
    auto st = Statement::prepare(db, "SELECT comm FROM threads WHERE session_id = ?1 AND tid = ?2 AND comm IS NOT NULL");
    if (!st) break;
    st->bind(1, session_id);
    st->bind(2, int64_t{id});
    if (st->step() == SQLITE_ROW && !st->col_text(0).empty()) return st->col_text(0);
  }
  return "";
}

}  // namespace

const char* ApiServerBusyRequestCause::recommendation([[maybe_unused]] const Culprit& culprit) {
  return "The API server's thread was busy on CPU while requests waited unread in its socket: move CPU-bound work "
         "(tokenization, detokenization, JSON of long responses, sync handlers) off the event loop (a thread or process "
         "pool, more API server processes), or profile the named thread.";
}

void ApiServerBusyRequestCause::find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
  for (const RequestSpan& s : ev.spans())
    if (s.id == part.id && s.server_pid == part.server_pid) {
      if (auto c = api_server_busy_claim(ev.db(), ev.session_id(), {part.server_pid, s.end_ns, s.read_end_ns}, part.from_ns,
                                         part.to_ns))
        out.push_back(std::move(*c));
      return;
    }
}

std::optional<CauseClaim> api_server_busy_claim(sqlite3* db, int64_t session_id, const ApiWait& wait, int64_t from,
                                                int64_t to) {
  const int64_t w0 = std::max(wait.end_ns, from), w1 = std::min(wait.read_end_ns, to);
  if (!wait.end_ns || w1 <= w0) return std::nullopt;
  const auto on_cpu = api_busy_on_cpu(db, session_id, wait.server_pid, w0, w1);
  if (on_cpu.empty()) return std::nullopt;
  const auto* top = argmax_by(on_cpu, [](const auto& e) { return e.second; });
  if (top->second <= 0) return std::nullopt;
  auto ms = [](int64_t ns) { return std::round(static_cast<double>(ns) / 1e3) / 1e3; };
  Culprit culprit{.pid = wait.server_pid,
                  .tid = top->first,
                  .comm = api_busy_thread_comm(db, session_id, top->first, wait.server_pid),
                  .share_kind = ShareKind::none};
  culprit.on_cpu_ms = ms(top->second);
  culprit.api_wait_ms = ms(wait.read_end_ns - wait.end_ns);
  return CauseClaim{RequestCause::api_server_busy, static_cast<double>(top->second), std::move(culprit)};
}

}  // namespace causeway::requests
