#include "diagnosis/correlator.h"

#include <algorithm>
#include <cinttypes>
#include <functional>
#include <utility>

#include "diagnosis/causes/registry.h"
#include "diagnosis/collectives.h"
#include "diagnosis/event_window.h"
#include "diagnosis/chunk_context.h"
#include "diagnosis/chunk_sizing.h"
#include "diagnosis/correlator_internal.h"
#include "diagnosis/tracer_pid.h"
#include "diagnosis/data_workers.h"
#include "diagnosis/session_scope.h"
#include "diagnosis/sibling_wakers.h"
#include "diagnosis/thread_run.h"
#include "bpf/events.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "tracedb/chain_store.h"
#include "tracedb/event_columns.h"
#include "tracedb/op_args.h"
#include "tracedb/op_catalog.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

std::string CorrelatorState::comm_of(uint32_t pid) const {
  if (pid == 0) return "idle";
  auto it = procs.find(pid);
  if (it != procs.end() && !it->second.comm.empty()) return sanitize_untrusted(it->second.comm, 64);
  auto t = threads.find(pid);
  if (t != threads.end() && !t->second.second.empty()) return sanitize_untrusted(t->second.second, 64);
  return "pid " + std::to_string(pid);
}

std::string CorrelatorState::thread_name(uint32_t tid) const {
  auto t = threads.find(tid);
  if (t != threads.end() && !t->second.second.empty()) return sanitize_untrusted(t->second.second, 64);
  return comm_of(tid);
}

bool CorrelatorState::is_kernel_thread(uint32_t pid) const {
  if (pid <= 2) return true;
  auto it = procs.find(pid);
  std::string comm;
  if (it != procs.end()) {
    if (it->second.ppid == 2) return true;
    comm = it->second.comm;
  } else if (auto t = threads.find(pid); t != threads.end()) {
    comm = t->second.second;
  }
  for (const char* p : {"kworker/", "jbd2/", "kswapd", "ksoftirqd/", "kcompactd", "flush-", "kthreadd", "xfsaild"})
    if (comm.rfind(p, 0) == 0) return true;
  return false;
}

namespace {

using State = CorrelatorState;


// ---- reading ---------------------------------------------------------------------------------

Result<void> load_names(State& s, sqlite3* db) {
  auto p = Statement::prepare(db, "SELECT pid, comm, ppid FROM processes WHERE session_id = ?1");
  if (!p) return p.error();
  p->bind(1, s.session_id);
  while (p->step() == SQLITE_ROW)
    s.procs[static_cast<uint32_t>(p->col_int(0))] = ProcInfo{p->col_text(1), p->col_null(2) ? -1 : p->col_int(2)};
  s.tracer_pid = read_tracer_pid(db, s.session_id);
  if (auto r = s.ranks.load(db, s.session_id); !r) return r.error();
  auto t = Statement::prepare(db, "SELECT tid, pid, comm FROM threads WHERE session_id = ?1");
  if (!t) return t.error();
  t->bind(1, s.session_id);
  while (t->step() == SQLITE_ROW)
    s.threads[static_cast<uint32_t>(t->col_int(0))] = {static_cast<uint32_t>(t->col_int(1)), t->col_text(2)};
  return {};
}

Ev decode_event_row(sqlite3_stmt* q) {
  auto get = [q](EventCol c) { return sqlite3_column_int64(q, col(c)); };
  Ev e;
  e.ts = get(EventCol::ts_ns);
  e.dur = get(EventCol::dur_ns);
  e.pid = static_cast<uint32_t>(get(EventCol::pid));
  e.tid = static_cast<uint32_t>(get(EventCol::tid));
  e.op = static_cast<uint16_t>(get(EventCol::op_id));
  e.cpu = sqlite3_column_type(q, col(EventCol::cpu)) == SQLITE_NULL ? -1 : static_cast<int32_t>(get(EventCol::cpu));
  e.stack = static_cast<uint64_t>(get(EventCol::stack_id));  // NULL reads as 0
  // Decoding a column costs; most rows are launches, which need only the kernel (a1).
  int nargs = args_needed(e.op);
  for (int i = 0; i < nargs; ++i) e.a[i] = sqlite3_column_int64(q, arg_col(i));
  return e;
}

// The read-ahead budget cut the scan short of kDisorderNs past `until`: a call that started
// before `until` but returned (and was written) later may sit further on. The zone map names
// every block holding a row that started before `until` (min_ts < until); take those rows
// now and remember their ids so the cursor skips them when it gets there.
Result<void> take_late_rows(State& s, sqlite3* db, int64_t until) {
  auto blocks = Statement::prepare(db,
                                   "SELECT max(first_id, ?2), last_id FROM event_blocks "
                                   "WHERE session_id = ?1 AND last_id >= ?2 AND min_ts < ?3 ORDER BY first_id");
  if (!blocks) return blocks.error();
  blocks->bind(1, s.session_id);
  blocks->bind(2, s.next_id);
  blocks->bind(3, until);
  auto rows = Statement::prepare(db, "SELECT " + event_select_list() +
                                         " FROM events WHERE id >= ?1 AND id <= ?2 AND ts_ns < ?3 ORDER BY id");
  if (!rows) return rows.error();
  while (blocks->step() == SQLITE_ROW) {
    rows->reset();
    rows->bind(1, blocks->col_int(0));
    rows->bind(2, blocks->col_int(1));
    rows->bind(3, until);
    sqlite3_stmt* q = rows->get();
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      const int64_t id = sqlite3_column_int64(q, col(EventCol::id));
      if (sqlite3_column_int64(q, col(EventCol::session_id)) != s.session_id || !s.taken_ahead.insert(id).second) continue;
      Ev e = decode_event_row(q);
      ++s.counters.events;
      if (e.ts >= s.window_start) s.pending.push_back(e);
    }
    if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db));
  }
  return {};
}

// Reads events in rowid order with a cursor, so each row is read once. events has no ts
// index; rows arrive nearly in time order (writer batches), so reading until a row at least
// kDisorderNs past `until` was seen leaves nothing older unread. Rows at or after `until`
// wait in s.pending; rows older than what is already analyzed are only context.
Result<void> load_events_until(State& s, sqlite3* db, int64_t until) {
  constexpr int64_t kDisorderNs = 1'000'000'000;
  constexpr int kBatch = 16384;
  // Read-ahead is also capped by count (48k rows ≈ 4 MiB; at 500k calls/s a second of rows
  // would be 40 MB); past the cap, take_late_rows() finds what started before `until`.
  constexpr size_t kPendingBudget = 48'000;
  auto ids = event_ids_for_window(db, s.session_id, s.window_start, INT64_MAX);
  if (!ids) return ids.error();
  if (s.next_id < ids->lo) s.next_id = ids->lo;
  auto st = Statement::prepare(db, "SELECT " + event_select_list() +
                                       " FROM events WHERE id >= ?1 AND id <= ?2 ORDER BY id LIMIT ?3");
  if (!st) return st.error();
  sqlite3_stmt* q = st->get();
  // Sized once: a doubling vector would briefly hold 1.5× the budget twice over.
  if (s.pending.capacity() < kPendingBudget + kBatch) s.pending.reserve(kPendingBudget + kBatch);
  bool more = false;  // rows past the cursor were left unread
  while (!ids->empty() && s.next_id <= ids->hi && s.max_ts_read < until + kDisorderNs &&
         (s.pending.size() < kPendingBudget || s.max_ts_read < until)) {
    st->reset();
    st->bind(1, s.next_id);
    st->bind(2, ids->hi);
    st->bind(3, int64_t{kBatch});
    int rc, n = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      ++n;
      const int64_t id = sqlite3_column_int64(q, col(EventCol::id));
      s.next_id = id + 1;
      // The zone map keeps the cursor inside this session's ids; without one (an old DB) other
      // sessions' rows are skipped here.
      if (sqlite3_column_int64(q, col(EventCol::session_id)) != s.session_id) continue;
      if (!s.taken_ahead.empty() && s.taken_ahead.erase(id)) continue;  // taken by take_late_rows
      Ev e = decode_event_row(q);
      ++s.counters.events;
      s.max_ts_read = std::max(s.max_ts_read, e.ts);
      if (e.ts < s.window_start) continue;
      s.pending.push_back(e);
    }
    if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db));
    more = n == kBatch;
    if (!more) break;  // caught up with what is committed
  }
  if (more && s.max_ts_read < until + kDisorderNs && s.next_id <= ids->hi)
    if (auto r = take_late_rows(s, db, until); !r) return r;
  // Move what is due (ts < until) from pending into the ts-sorted buffer.
  auto due = std::partition(s.pending.begin(), s.pending.end(), [&](const Ev& e) { return e.ts < until; });
  if (due != s.pending.begin()) {
    const size_t mid = s.evbuf.size();
    const size_t n = static_cast<size_t>(due - s.pending.begin());
    // Grow by a quarter, not the doubling insert() would do: the buffer is the correlator's
    // largest allocation and its size is already bounded by the chunk budget.
    if (s.evbuf.capacity() < mid + n) s.evbuf.reserve(mid + n + mid / 4);
    s.evbuf.insert(s.evbuf.end(), s.pending.begin(), due);
    s.pending.erase(s.pending.begin(), due);
    auto by_ts = [](const Ev& a, const Ev& b) { return a.ts < b.ts; };
    auto m = s.evbuf.begin() + static_cast<std::ptrdiff_t>(mid);
    std::sort(m, s.evbuf.end(), by_ts);
    if (m != s.evbuf.begin() && by_ts(*m, *(m - 1))) std::inplace_merge(s.evbuf.begin(), m, s.evbuf.end(), by_ts);
    for (auto it = m; it != s.evbuf.end(); ++it) s.data_end = std::max(s.data_end, it->end());
  }
  return {};
}

// Appends rows with ts in [s.loaded_to, until) to the buffers (ts order). Sched and wake-up
// rows are read kSchedAheadNs further: they are few next to calls, and a slow call near the
// end of a chunk needs its thread's switches over its whole duration, which at high call
// rates (short chunks and context) would otherwise run past what is loaded. They are read
// by ts range, each range once, so never past the host-context watermark (s.context_to): a
// range read before its rows were committed would stay empty for good, and the calls in it
// would be judged with no scheduler context (docs/DIAGNOSIS.md "The watermark rule").
// The rows of one host table (?1 <= ts_ns < ?2, session ?3, in time order), one call each.
template <typename OnRow>
Result<void> read_window(sqlite3* db, const char* sql, int64_t from, int64_t until, int64_t session_id, OnRow&& on_row) {
  auto st = Statement::prepare(db, sql);
  if (!st) return st.error();
  st->bind(1, from);
  st->bind(2, until);
  st->bind(3, session_id);
  while (st->step() == SQLITE_ROW) on_row(*st);
  return {};
}

Result<void> load_until(State& s, sqlite3* db, int64_t until) {
  constexpr int64_t kSchedAheadNs = 1'000'000'000;
  if (until > s.loaded_to) {
    if (auto r = load_events_until(s, db, until); !r) return r;
    s.loaded_to = until;
  }
  const int64_t from = s.sched_loaded_to == INT64_MIN ? s.window_start : s.sched_loaded_to;
  until = until > INT64_MAX - kSchedAheadNs ? INT64_MAX : until + kSchedAheadNs;
  until = std::min(until, s.context_to);
  if (until <= from) return {};
  auto sched = read_window(db,
                           "SELECT ts_ns, cpu, prev_tid, prev_pid, prev_state, next_tid, next_pid FROM sched "
                           "WHERE ts_ns >= ?1 AND ts_ns < ?2 AND session_id = ?3 ORDER BY ts_ns",
                           from, until, s.session_id, [&](Statement& st) {
                             s.sched_seen = true;
                             s.schedbuf.push_back({st.col_int(0), static_cast<int32_t>(st.col_int(1)),
                                                   static_cast<uint32_t>(st.col_int(2)), static_cast<uint32_t>(st.col_int(3)),
                                                   st.col_int(4), static_cast<uint32_t>(st.col_int(5)),
                                                   static_cast<uint32_t>(st.col_int(6))});
                             ++s.counters.sched_rows;
                             s.data_end = std::max(s.data_end, st.col_int(0));
                           });
  if (!sched) return sched;
  auto wakeups = read_window(db,
                             "SELECT ts_ns, tid, pid, coalesce(waker_tid, 0), coalesce(waker_pid, 0) FROM wakeups "
                             "WHERE ts_ns >= ?1 AND ts_ns < ?2 AND session_id = ?3 ORDER BY ts_ns",
                             from, until, s.session_id, [&](Statement& st) {
                               s.wakebuf.push_back({st.col_int(0), static_cast<uint32_t>(st.col_int(1)),
                                                    static_cast<uint32_t>(st.col_int(2)), static_cast<uint32_t>(st.col_int(3)),
                                                    static_cast<uint32_t>(st.col_int(4))});
                               ++s.counters.wakeups;
                             });
  if (!wakeups) return wakeups;
  s.sched_loaded_to = until;
  return {};
}

template <typename V>
void trim_before(V& v, int64_t ts) {
  auto it = std::find_if(v.begin(), v.end(), [&](const auto& r) { return r.ts_ns >= ts; });
  v.erase(v.begin(), it);
}

void trim_events_before(std::vector<Ev>& v, int64_t ts) {
  auto it = std::lower_bound(v.begin(), v.end(), ts, [](const Ev& e, int64_t t) { return e.ts < t; });
  v.erase(v.begin(), it);
  // A burst of events grows the buffer; give the memory back once the rate drops.
  if (v.capacity() > 4 * v.size() + 65536) v.shrink_to_fit();
}

// ---- per-chunk indexes -------------------------------------------------------------------------

// Arbitration between the host causes of one slow call (or gap). Host time explains the call
// when, all states together (runnable, D, asleep until a sibling woke it), it covers at least
// half of the time lost; the call then goes to the state with the most time — the evidence
// decides, not the order of the checks. A state must reach `floor` by itself to be a cause.
// The wait for a CPU after waking from D counts for the D cause: on a busy host every wake-up
// waits, and the I/O wait is what put the thread to sleep.
// Between calls, a sleep that a data worker ended (data_workers.h) is a fourth state: the
// thread was starved of input, not blocked by its own process.
enum class HostClaim : uint8_t { none, runnable, uninterruptible, sibling, data_worker };

HostClaim host_claim(const Slow& w, int64_t sib_ns, int64_t worker_ns) {
  const int64_t r = w.off.runnable_ns - w.off.runnable_after_d_ns;
  const int64_t d = w.off.uninterruptible_ns + w.off.runnable_after_d_ns;
  if (2 * (r + d + sib_ns + worker_ns) < w.excess) return HostClaim::none;
  const int64_t top = std::max({r, d, sib_ns, worker_ns});
  if (top < w.floor) return HostClaim::none;
  if (r == top) return HostClaim::runnable;
  if (d == top) return HostClaim::uninterruptible;
  if (sib_ns == top) return HostClaim::sibling;
  return HostClaim::data_worker;
}

class ChunkAnalyzer {
 public:
  // rollup_base: the fast-counted ops' baselines from the rollups (diagnosis/rollup_baselines.h),
  // which replace their row baselines.
  ChunkAnalyzer(State& s, CauseStates& causes, int64_t cf, int64_t ct, std::unordered_map<uint64_t, Baseline> rollup_base)
      : s_(s), causes_(causes), cf_(cf), ct_(ct), wakers_(tl_, s.evbuf), base_(std::move(rollup_base)) {}

  void run() {
    tl_.build(s_.schedbuf, s_.wakebuf, std::max(s_.data_end, ct_));
    add_imported_off_cpu();
    index_host();
    causes_.observe_chunk(context(), cf_, ct_);
    for (auto& [key, b] : chunk_baselines(s_.evbuf, cf_, ct_, s_.prev_durs)) base_.try_emplace(key, b);
    scan_calls();
  }

 private:
  State& s_;
  CauseStates& causes_;  // every cause module's accumulator (diagnosis/causes/registry.h)
  int64_t cf_, ct_;
  ThreadTimelines tl_;
  SiblingWakers wakers_;
  HostIndex hx_;
  std::vector<CollectiveEntry> entries_;
  std::vector<CollectiveGroup> groups_;
  std::map<std::pair<int64_t, int64_t>, size_t> group_of_;  // (comm, seq) -> group
  std::unordered_map<uint64_t, Baseline> base_;
  std::unordered_map<uint32_t, std::pair<int64_t, int64_t>> last_coll_;  // tid -> (comm, seq) of its last collective

  // An imported trace's `sched_switch` host events say only that a thread was off CPU for a
  // while (docs/IMPORT.md): that time is not on-CPU time between calls (host_bound).
  void add_imported_off_cpu() {
    std::vector<std::pair<uint32_t, std::pair<int64_t, int64_t>>> ivs;
    for (const Ev& e : s_.evbuf)
      if (e.op == CW_OP_SCHED_SWITCH) ivs.push_back({e.tid, {e.ts, e.end()}});
    if (ivs.empty()) return;
    s_.sched_seen = true;
    tl_.add_opaque(std::move(ivs));
  }

  // The host-event index and the NCCL collective groups every detector reads.
  void index_host() {
    // Communicators no init, launcher, title or structure gives, from the collectives
    // themselves (docs/INFERENCE.md "How ranks are found", step 5), as the request causes find
    // them: from the calls read so far, this chunk's and its context's included.
    for (const Ev& e : s_.evbuf)
      if (is_collective_op(e.op)) {
        const CollArgs c = coll_args(e);
        if (c.rank < 0)
          s_.ranks.observe({.pid = e.pid, .handle = c.comm, .seq = c.seq, .op = e.op, .count = c.count,
                            .datatype = c.datatype, .entry_ns = e.ts, .end_ns = e.end()});
      }
    s_.ranks.settle();
    for (const Ev& e : s_.evbuf) {
      switch (e.op) {
        case CW_OP_BLOCK_RQ: hx_.blocks.push_back(&e); hx_.max_block_dur = std::max(hx_.max_block_dur, e.dur); break;
        case CW_OP_TCP_RETRANSMIT: case CW_OP_TCP_RETRANSMIT6: hx_.retransmits.push_back(&e); break;
        case CW_OP_PAGE_ALLOC: hx_.page_allocs.push_back(&e); hx_.max_alloc_dur = std::max(hx_.max_alloc_dur, e.dur); break;
        case CW_OP_OOM_KILL: hx_.ooms.push_back(&e); break;
        default:
          if (is_submit_op(e.op)) hx_.submits[e.pid].push_back(e.ts);
          if (e.op == CW_OP_CALLS_AGGREGATED && is_submit_op(static_cast<uint16_t>(e.a[2]))) {
            // The run's calls, spread over it: what a later wait can be waiting for.
            const int64_t n = std::max<int64_t>(1, e.a[0]);
            for (int64_t i = 0; i < n; ++i) hx_.submits[e.pid].push_back(e.ts + e.dur * i / n);
          }
          if (is_collective_op(e.op)) {
            const CollArgs c = coll_args(e);
            entries_.push_back({c.comm, c.seq, e.pid, e.tid, c.rank, c.nranks, e.op, e.ts, e.end()});
            s_.ranks.resolve(entries_.back(), e.end());  // a rank whose init was not traced (diagnosis/rank_inference.h)
          }
      }
    }
    s_.ranks.align(entries_);
    if (entries_.empty()) return;
    mark_step_starts(entries_);
    groups_ = group_collectives(entries_);
    for (size_t i = 0; i < groups_.size(); ++i) group_of_[{groups_[i].comm, groups_[i].seq}] = i;
  }

  bool is_late_entry(const Ev& e) const {
    if (!is_collective_op(e.op)) return false;
    auto g = group_of_.find({coll_args(e).comm, coll_args(e).seq});
    if (g == group_of_.end()) return false;
    const CollectiveGroup& grp = groups_[g->second];
    return grp.has_straggler && entries_[grp.straggler].pid == e.pid;
  }

  void check_gap(const Ev& e, int64_t prev_end) {
    Slow w;
    w.e = &e;
    w.from = prev_end;
    w.to = e.ts;
    w.gap = true;
    w.off = tl_.off_cpu_in(e.tid, prev_end, e.ts);
    int64_t sib_ns = 0;
    uint32_t sib = 0;
    w.floor = s_.opt.min_stall_ns;
    std::vector<WorkerWait> waits;
    if (w.off.sleeping_ns >= w.floor) waits = data_worker_waits(s_, tl_, e.tid, e.pid, prev_end, e.ts);
    int64_t worker_ns = 0;
    for (const WorkerWait& ww : waits) worker_ns += ww.ns;
    bool sibling = w.off.sleeping_ns >= w.floor &&
                   wakers_.woken_by_sibling(e.tid, e.pid, prev_end, e.ts, sib_ns, sib, true, waits) && sib_ns >= w.floor;
    // Only the part of the gap spent involuntarily off-CPU, or asleep until its own process or
    // its data workers handed it work, is a loss; the rest is the program's own host work or
    // a sleep it chose.
    w.excess = w.off.runnable_ns + w.off.uninterruptible_ns + (sibling ? sib_ns : 0) + worker_ns;
    if (w.excess < s_.opt.min_stall_ns) return;
    attribute_host(w, sibling, sib, sib_ns, waits);
  }

  // Arbitration among the host causes (host_claim), then the winner's detector claims the call:
  // cpu_contention, io_contention / memory_pressure / unknown (D), lock_contention. False when
  // host time does not explain at least half of the excess.
  bool attribute_host(const Slow& w, bool sibling, uint32_t sib, int64_t sib_ns, const std::vector<WorkerWait>& waits = {}) {
    ChunkContext cx = context();
    int64_t worker_ns = 0;
    for (const WorkerWait& ww : waits) worker_ns += ww.ns;
    switch (host_claim(w, sibling ? sib_ns : 0, worker_ns)) {
      case HostClaim::runnable: CpuContention::detect(cx, w); return true;
      case HostClaim::uninterruptible:
        // D state: block I/O overlapping it, else memory reclaim, else no evidence.
        if (!IoContention::detect(cx, w) && !MemoryPressure::detect(cx, w)) Unknown::detect_d_state(cx, w);
        return true;
      case HostClaim::sibling: LockContention::detect(cx, w, sib, sib_ns); return true;
      case HostClaim::data_worker: DataLoaderStarvation::detect(cx, w, waits); return true;
      case HostClaim::none: return false;
    }
    return false;
  }

  // A sync that waited for a collective a late rank entered last: the straggler accounting
  // (NcclStraggler::observe_chunk) already counts this wait against that rank.
  bool attribute_collective_wait(const Slow& w) {
    auto lc = last_coll_.find(w.e->tid);
    if (lc == last_coll_.end() || !is_gpu_wait_op(w.e->op)) return false;
    auto g = group_of_.find(lc->second);
    if (g == group_of_.end()) return false;
    const CollectiveGroup& grp = groups_[g->second];
    if (!grp.has_straggler || entries_[grp.straggler].pid == w.e->pid) return false;
    if (grp.last_entry_ns > w.e->end()) return false;
    ++s_.counters.slow_calls;
    // A rank late for want of a CPU: the wait is cpu_contention's (NcclStraggler::report).
    const CollectiveEntry& late = entries_[grp.straggler];
    if (straggler_late_for_cpu(s_, tl_, late, grp.lateness_ns))
      claim_call(s_, *w.e, w.gap, w.excess, CpuContention::name, late_rank_cpu_chain_id(s_.session_id, late.pid, grp.comm));
    else
      claim_call(s_, *w.e, w.gap, w.excess, NcclStraggler::name, nccl_straggler_chain_id(s_.session_id, late.pid, grp.comm));
    return true;
  }

  // The read-only view every detector gets (and the accumulators it writes its claim into).
  ChunkContext context() { return ChunkContext{s_, tl_, hx_, entries_, groups_, group_of_, last_coll_}; }

  // The walk: every traced call of the chunk, in time order, is judged (arbitration) and then
  // observed by every cause module through the registry.
  void scan_calls() {
    ChunkContext cx = context();
    auto lo = std::lower_bound(s_.evbuf.begin(), s_.evbuf.end(), cf_, [](const Ev& e, int64_t t) { return e.ts < t; });
    for (auto it = lo; it != s_.evbuf.end() && it->ts < ct_; ++it) {
      const Ev& e = *it;
      if (e.op == CW_OP_CALLS_AGGREGATED) {
        scan_run(e);
        continue;
      }
      if (!is_traced_call_op(e.op)) continue;
      ++s_.counters.calls;
      OpAcc& oa = s_.ops[op_key(e.pid, e.op)];
      if (!s_.rollup_ops.count(op_key(e.pid, e.op))) oa.add(e.dur);
      auto [fc, fresh] = s_.first_call.try_emplace(e.pid, e.ts);
      const bool startup = e.ts < fc->second + s_.opt.startup_ns;
      const bool has_timeline = !tl_.intervals(e.tid).empty();

      // Gap before this call on the same thread: a host stall there starves the GPU queue.
      int64_t prev_end = INT64_MIN;
      if (auto le = s_.last_end.find(e.tid); le != s_.last_end.end()) prev_end = le->second;
      s_.last_end[e.tid] = std::max(prev_end, e.end());
      if (has_timeline && prev_end != INT64_MIN && e.ts - prev_end >= s_.opt.min_stall_ns && !is_late_entry(e))
        check_gap(e, prev_end);

      if (is_collective_op(e.op)) last_coll_[e.tid] = {coll_args(e).comm, coll_args(e).seq};
      // A call inside another traced call of the same thread (cuMemcpy inside cudaMemcpy):
      // the outer call carries the time; counting both would double the loss.
      if (prev_end != INT64_MIN && e.ts < prev_end) continue;
      Slow w;
      w.e = &e;
      w.from = e.ts;
      w.to = e.end();
      w.startup = startup;
      if (has_timeline) w.off = tl_.off_cpu_in(e.tid, e.ts, e.end());
      s_.activity[e.tid].add_call(e, prev_end, w.off, has_timeline ? &tl_ : nullptr);
      const CallVerdict verdict = judge(w, oa, has_timeline, queued_ahead(e));
      causes_.observe(e, ObserveContext{cx, startup, verdict});
    }
  }

  // A thread's fast calls counted in the kernel between two recorded calls (docs/COLLECTOR.md
  // "Aggregated calls"): none of them was slow, failed or followed a host stall, so none is
  // judged; they count in the op's baseline and the thread's activity as the calls they were.
  void scan_run(const Ev& e) {
    const auto n = static_cast<uint64_t>(std::max<int64_t>(0, e.a[0]));
    const auto op = static_cast<uint16_t>(e.a[2]);
    s_.counters.calls += n;
    if (!s_.rollup_ops.count(op_key(e.pid, op))) {
      OpAcc& oa = s_.ops[op_key(e.pid, op)];
      add_counted_run_to_baseline(e, oa.count, oa.hist, oa.min, oa.max);
    }
    s_.first_call.try_emplace(e.pid, e.ts);
    int64_t prev_end = INT64_MIN;
    if (auto le = s_.last_end.find(e.tid); le != s_.last_end.end()) prev_end = le->second;
    s_.last_end[e.tid] = std::max(prev_end, e.end());
    const bool has_timeline = !tl_.intervals(e.tid).empty();
    add_counted_run(s_.activity[e.tid], e, prev_end, has_timeline ? &tl_ : nullptr);
  }

  // GPU work this process queued since its previous GPU wait returned: what a slow wait can be
  // waiting for (gpu_wait's positive evidence).
  int64_t queued_ahead(const Ev& e) {
    if (!is_gpu_wait_op(e.op)) return 0;
    int64_t& prev_wait = s_.last_gpu_wait_end.try_emplace(e.pid, INT64_MIN).first->second;
    int64_t n = 0;
    if (auto sub = hx_.submits.find(e.pid); sub != hx_.submits.end()) n = count_in(sub->second, prev_wait, e.ts);
    prev_wait = std::max(prev_wait, e.end());
    return n;
  }

  // Arbitration for one outermost call: whether it is slow, and which per-call cause takes it.
  CallVerdict judge(Slow& w, OpAcc& oa, bool has_timeline, int64_t queued) {
    const Ev& e = *w.e;
    ChunkContext cx = context();
    const Baseline& b = base_[op_key(e.pid, e.op)];
    w.median = b.usable() ? b.median_ns : 0;
    const bool outlier = b.usable() && e.dur >= outlier_threshold(b, s_.opt.outlier);
    // An outlier needs only enough of a host cause to explain half its excess; a call that
    // is not an outlier (the baseline is made of stalled calls) needs a real stall.
    w.floor = outlier ? kOutlierHostFloorNs : s_.opt.min_stall_ns;
    int64_t sib_ns = 0;
    uint32_t sib = 0;
    const bool sibling = has_timeline && w.off.sleeping_ns >= w.floor &&
                         wakers_.woken_by_sibling(e.tid, e.pid, e.ts, e.end(), sib_ns, sib, false) && sib_ns >= w.floor;
    const bool stall = w.off.runnable_ns >= s_.opt.min_stall_ns || w.off.uninterruptible_ns >= s_.opt.min_stall_ns || sibling;
    // Cold start: the first call of an op (of a kernel, for launches) soon after the
    // process's first call, when it is an outlier or, with no baseline yet, >= 10 ms.
    bool first_of_kind = false;
    if (w.startup) {
      uint64_t kind = (uint64_t{e.pid} << 32) ^ (uint64_t{e.op} << 16) ^
                      (is_submit_op(e.op) && !is_sync_copy_op(e.op) ? static_cast<uint64_t>(submit_target(e)) * 0x9E3779B97F4A7C15ULL : 0);
      first_of_kind = s_.seen_kinds.insert(kind).second;
    }
    const bool cold = first_of_kind && (outlier || (!b.usable() && e.dur >= 10'000'000));
    if (!outlier && !stall && !cold) return CallVerdict::normal;
    w.excess = b.usable() ? std::max<int64_t>(0, e.dur - b.median_ns) : e.dur;
    if (!outlier) {
      // The baseline itself is made of stalled calls: count the stall as the loss.
      int64_t host = w.off.runnable_ns + w.off.uninterruptible_ns + sib_ns;
      w.excess = std::min(e.dur, std::max(w.excess, host));
    }
    if (w.excess <= 0) return CallVerdict::no_loss;
    if (attribute_host(w, sibling, sib, sib_ns)) {
      ++oa.slow;
      return CallVerdict::claimed;
    }
    if (cold) {
      ColdStart::detect(cx, w);
      ++oa.slow;
      return CallVerdict::claimed;
    }
    // An expensive device alloc or free no host cause explains is the allocator's, judged over
    // the session (its storms). A call that is not an outlier was examined only for its host
    // stall, and no host cause claims it: an ordinary call, not a GPU wait or unknown slowness.
    if ((is_device_alloc_op(e.op) && e.dur >= s_.opt.expensive_alloc_ns) || !outlier) return CallVerdict::unclaimed;
    if (attribute_collective_wait(w)) return CallVerdict::claimed;  // counted by the straggler accounting
    ++oa.slow;
    if (Network::detect(cx, w)) return CallVerdict::claimed;
    // Block reads its own thread issued inside the call (page faults on a file-backed source,
    // a read): host I/O, whether the thread waited for it in D or stayed on-CPU.
    if (IoContention::detect_issued(cx, w)) return CallVerdict::claimed;
    // A call that ends after the host-context watermark (a live poll; only calls longer
    // than its lag) had no host cause in what is stored so far, which rules none out.
    const bool context_complete = e.end() <= s_.context_to;
    // A synchronous copy that lost its time on-CPU did host work as far as the trace shows
    // (a pageable source staged or faulted in by the CPU), or spun on queued GPU work: the
    // trace cannot tell which, so it is never a GPU wait. Only its sleep in the driver is.
    const bool host_copy = has_timeline && is_sync_copy_op(e.op) && 2 * w.off.sleeping_ns < w.excess;
    if (is_gpu_wait_op(e.op) && context_complete && !host_copy) GpuWait::detect(cx, w, queued, causes_.of<GpuWait>());
    else Unknown::detect(cx, w, context_complete, host_copy);
    return CallVerdict::claimed;
  }
};

}  // namespace

// ---- Correlator --------------------------------------------------------------------------------

Correlator::Correlator(int64_t session_id, CorrelatorOptions options)
    : s_(std::make_unique<State>()), causes_(std::make_unique<CauseStates>()) {
  s_->session_id = session_id;
  s_->opt = options;
}

Correlator::~Correlator() = default;

int64_t Correlator::analyzed_to() const { return s_->analyzed_to; }
void Correlator::set_host_context_to(int64_t ns) {
  // Marks only move forward; the first one bounds the default (unbounded) context.
  s_->context_to = s_->context_to == INT64_MAX ? ns : std::max(s_->context_to, ns);
}
void Correlator::mark_published(const std::string& chain_id) { s_->published.insert(chain_id); }
const CorrelatorCounters& Correlator::counters() const { return s_->counters; }
std::vector<CallCauseRecord> Correlator::take_call_causes() { return std::exchange(s_->claims, {}); }

namespace {

// Host rows (not calls, not runs of counted calls) starting in [from, to) of the ts-sorted
// buffer: counted by time, not by what a read happened to take, so the same in both stores.
uint64_t host_rows_in(const std::vector<Ev>& evbuf, int64_t from, int64_t to) {
  auto it = std::lower_bound(evbuf.begin(), evbuf.end(), from, [](const Ev& e, int64_t t) { return e.ts < t; });
  uint64_t n = 0;
  for (; it != evbuf.end() && it->ts < to; ++it)
    if (!is_traced_call_op(it->op) && it->op != CW_OP_CALLS_AGGREGATED) ++n;
  return n;
}

// The fast-counted ops' baselines for the chunk [cf, ct): the rollups of the seconds the
// previous chunk and this one touch (the row baselines span two chunks too). The seconds read
// for the first time add their calls to the ops' statistics (OpAcc), each second once.
Result<std::unordered_map<uint64_t, Baseline>> rollup_baselines_for(State& s, sqlite3* db, int64_t cf, int64_t ct) {
  constexpr int64_t kNsPerSec = 1'000'000'000;
  const int64_t from_sec = (s.prev_chunk_from == INT64_MIN ? cf : s.prev_chunk_from) / kNsPerSec;
  const int64_t to_sec = (ct - 1) / kNsPerSec + 1;
  auto read = s.rollup_secs.read(db, s.session_id, from_sec, to_sec, [&s](uint64_t key, const OpRollup& r) {
    OpAcc& oa = s.ops[key];
    oa.count += r.count;
    oa.hist.merge(r.hist);
    oa.min = std::min(oa.min, r.min_ns);
    oa.max = std::max(oa.max, r.max_ns);
    s.rollup_ops.insert(key);
  });
  if (!read) return read.error();
  auto base = s.rollup_secs.baselines(from_sec, to_sec);
  s.rollup_secs.forget_before(cf / kNsPerSec);
  return base;
}

}  // namespace

Result<void> Correlator::analyze(sqlite3* db, int64_t from_ns, int64_t to_ns) {
  State& s = *s_;
  if (to_ns <= from_ns) return {};
  if (s.analyzed_to != INT64_MIN && from_ns < s.analyzed_to) from_ns = s.analyzed_to;
  if (auto r = load_names(s, db); !r) return r;
  if (s.loaded_to == INT64_MIN) {
    s.loaded_to = from_ns - s.opt.context_ns;
    s.window_start = s.loaded_to;
  }
  s.analyzed_from = std::min(s.analyzed_from, from_ns);
  // Memory: the event buffer holds a chunk plus context on each side, 88 B an event. At
  // 450k calls/s a 10 s chunk would be ~700 MB, so chunks shrink to hold about
  // kChunkEventBudget events once the rate says they must (diagnosis/chunk_sizing.h). The rate
  // is the rollups' calls per second plus the host rows loaded, the same whether the calls
  // were stored as rows (--record-all) or counted in the kernel: row counts of calls never
  // decide, so both stores get the same chunks. A session without rollups (an old DB) falls
  // back to the rows' rate.
  auto peak = s.rollup_peak.read(db, s.session_id);
  if (!peak) return peak.error();
  s.calls_per_ns = std::max(s.calls_per_ns, *peak);
  if (s.calls_per_ns == 0 && s.events_per_ns == 0) {
    // Before the first load, the zone map gives the peak row rate for free: each writer batch
    // knows its row count and time span (spans under 10 ms are too short to say much).
    auto st = Statement::prepare(db,
                                 "SELECT max((last_id - first_id + 1) * 1.0 / (max_ts - min_ts)) FROM event_blocks "
                                 "WHERE session_id = ?1 AND max_ts - min_ts >= 10000000");
    if (!st) return st.error();
    st->bind(1, s.session_id);
    if (st->step() == SQLITE_ROW && !st->col_null(0)) s.events_per_ns = st->col_double(0);
  }
  for (int64_t cf = from_ns; cf < to_ns;) {
    const ChunkSpan span = chunk_span(s.opt, s.calls_per_ns > 0 ? s.calls_per_ns + s.host_rows_per_ns : s.events_per_ns);
    const int64_t context = span.context_ns;
    int64_t ct = std::min(to_ns, cf + span.chunk_ns);
    const uint64_t events_before = s.counters.events;
    int64_t loaded_before = s.loaded_to;
    if (auto r = load_until(s, db, ct + context); !r) return r;
    if (s.loaded_to > loaded_before) {
      const auto loaded_ns = static_cast<double>(s.loaded_to - loaded_before);
      s.events_per_ns = std::max(s.events_per_ns, static_cast<double>(s.counters.events - events_before) / loaded_ns);
      s.host_rows_per_ns = std::max(s.host_rows_per_ns, static_cast<double>(host_rows_in(s.evbuf, loaded_before, s.loaded_to)) / loaded_ns);
    }
    auto rollup_base = rollup_baselines_for(s, db, cf, ct);
    if (!rollup_base) return rollup_base.error();
    ChunkAnalyzer(s, *causes_, cf, ct, std::move(*rollup_base)).run();
    ++s.counters.chunks;
    s.analyzed_to = ct;
    s.prev_chunk_from = cf;
    int64_t keep = ct - context;
    trim_events_before(s.evbuf, keep);
    trim_before(s.schedbuf, keep);
    trim_before(s.wakebuf, keep);
    cf = ct;
  }
  return {};
}

Result<std::vector<ChainRecord>> Correlator::chains(sqlite3* db) { return build_chains(*s_, *causes_, db); }

Result<std::vector<ChainRecord>> diagnose_session(sqlite3* db, int64_t session_id, std::optional<int64_t> from_ns,
                                                  std::optional<int64_t> to_ns, const CorrelatorOptions& options,
                                                  std::vector<CallCauseRecord>* call_causes) {
  auto scope = resolve_scope(db, session_id, std::nullopt);
  if (!scope) return scope.error();
  int64_t from = from_ns.value_or(scope->from_ns);
  int64_t to = to_ns.value_or(scope->to_ns + 1);
  Correlator c(session_id, options);
  if (auto r = c.analyze(db, from, to); !r) return r.error();
  auto chains = c.chains(db);
  if (call_causes) *call_causes = c.take_call_causes();
  return chains;
}

Result<size_t> diagnose_and_store(const std::string& db_path, std::optional<int64_t> session_id,
                                  const CorrelatorOptions& options) {
  std::vector<ChainRecord> chains;
  std::vector<CallCauseRecord> causes;
  int64_t sid = 0;
  {
    auto ro = open_read_only(db_path);
    if (!ro) return ro.error();
    auto scope = resolve_scope(ro->get(), session_id, std::nullopt);
    if (!scope) return scope.error();
    sid = scope->session_id;
    auto r = diagnose_session(ro->get(), sid, std::nullopt, std::nullopt, options, &causes);
    if (!r) return r.error();
    chains = std::move(*r);
  }
  auto rw = open_for_write(db_path);
  if (!rw) return rw.error();
  if (auto r = replace_session_diagnosis(rw->get(), sid, chains, causes); !r) return r.error();
  close_writer_cleanly(*rw);
  return chains.size();
}

// ---- LiveCorrelator ------------------------------------------------------------------------------

LiveCorrelator::LiveCorrelator(int64_t session_id, int64_t session_start_ns, CorrelatorOptions options, int64_t lag_ns)
    : correlator_(session_id, options), session_id_(session_id), next_from_ns_(session_start_ns), lag_ns_(lag_ns) {}

namespace {

// The newest committed call start of the session: from the event_blocks zone map, else
// from the last rows by id (events has no ts index).
Result<std::optional<int64_t>> newest_event_ns(sqlite3* db, int64_t session_id) {
  auto st = Statement::prepare(db, "SELECT max(max_ts) FROM event_blocks WHERE session_id = ?1");
  if (!st) return st.error();
  st->bind(1, session_id);
  if (st->step() == SQLITE_ROW && !st->col_null(0)) return std::optional<int64_t>(st->col_int(0));
  static constexpr EventColumns<1> kTs{{EventCol::ts_ns}};
  auto q = Statement::prepare(db, "SELECT max(ts_ns) FROM (SELECT " + kTs.sql() +
                                      " FROM events WHERE session_id = ?1 ORDER BY id DESC LIMIT 65536)");
  if (!q) return q.error();
  q->bind(1, session_id);
  if (q->step() == SQLITE_ROW && !q->col_null(0)) return std::optional<int64_t>(q->col_int(0));
  return std::optional<int64_t>();
}

// Up to when the session's host context is stored (docs/DIAGNOSIS.md "The watermark rule"):
// unbounded once the session has stopped (the collector stores everything before it marks the
// stop), else the collector's last watermark, else nothing (a writer that sets none). Read
// before the rows it vouches for: they were committed with it or earlier.
Result<int64_t> host_context_to(sqlite3* db, int64_t session_id) {
  auto st = Statement::prepare(db,
                               "SELECT (SELECT stopped_ns FROM sessions WHERE id = ?1), "
                               "(SELECT value FROM collector_stats WHERE session_id = ?1 AND name = ?2)");
  if (!st) return st.error();
  st->bind(1, session_id);
  st->bind(2, std::string(kHostContextCounter));
  if (st->step() != SQLITE_ROW) return make_error("sql", sqlite_error_text(db));
  if (!st->col_null(0)) return INT64_MAX;
  return st->col_null(1) ? INT64_MIN : st->col_int(1);
}

// Up to when the session's rollups are complete (sessions.rolled_up_to_ns); 0 when the writer
// has rolled nothing up (none yet, or rows written without a StoreWriter).
Result<int64_t> rollups_complete_to(sqlite3* db, int64_t session_id) {
  auto st = Statement::prepare(db, "SELECT rolled_up_to_ns FROM sessions WHERE id = ?1");
  if (!st) return st.error();
  st->bind(1, session_id);
  if (st->step() != SQLITE_ROW) return make_error("sql", sqlite_error_text(db));
  return st->col_null(0) ? int64_t{0} : st->col_int(0);
}

// The earliest start of a committed event that ends after `mark` (zone map: the batches
// holding one), INT64_MAX when none: analysis stops before it, so a long call whose host
// context is not all stored yet waits for a later poll instead of being judged without it.
Result<int64_t> first_start_ending_after(sqlite3* db, int64_t session_id, int64_t mark) {
  auto st = Statement::prepare(db, "SELECT min(min_ts) FROM event_blocks WHERE session_id = ?1 AND max_end_ns > ?2");
  if (!st) return st.error();
  st->bind(1, session_id);
  st->bind(2, mark);
  if (st->step() != SQLITE_ROW) return make_error("sql", sqlite_error_text(db));
  return st->col_null(0) ? INT64_MAX : st->col_int(0);
}

}  // namespace

Result<std::vector<ChainRecord>> LiveCorrelator::poll(sqlite3* db) {
  auto mark = host_context_to(db, session_id_);
  if (!mark) return mark.error();
  auto q = newest_event_ns(db, session_id_);
  if (!q) return q.error();
  if (!*q) return std::vector<ChainRecord>{};
  // Calls are judged only once their host context is stored: up to the mark, and before any
  // committed call that ends after it.
  int64_t until = std::min(**q - lag_ns_, *mark);
  if (until <= next_from_ns_) return std::vector<ChainRecord>{};
  auto open_call = first_start_ending_after(db, session_id_, *mark);
  if (!open_call) return open_call.error();
  until = std::min(until, *open_call);
  // Nor past the complete rollups: the launch baselines are read from them, each second once
  // (diagnosis/rollup_baselines.h). The writer rolls a second up 2 s after it, within the lag.
  auto rolled = rollups_complete_to(db, session_id_);
  if (!rolled) return rolled.error();
  if (*rolled > 0) until = std::min(until, *rolled);
  if (until <= next_from_ns_) return std::vector<ChainRecord>{};
  correlator_.set_host_context_to(*mark);
  if (auto r = correlator_.analyze(db, next_from_ns_, until); !r) return r.error();
  next_from_ns_ = until;
  return emit_changed(db);
}

Result<std::vector<ChainRecord>> LiveCorrelator::finish(sqlite3* db) {
  auto mark = host_context_to(db, session_id_);
  if (!mark) return mark.error();
  auto q = newest_event_ns(db, session_id_);
  if (!q) return q.error();
  correlator_.set_host_context_to(*mark);
  if (*q && **q + 1 > next_from_ns_) {
    if (auto r = correlator_.analyze(db, next_from_ns_, **q + 1); !r) return r.error();
    next_from_ns_ = **q + 1;
  }
  return emit_changed(db);
}

Result<std::vector<ChainRecord>> LiveCorrelator::emit_changed(sqlite3* db) {
  auto all = correlator_.chains(db);
  if (!all) return all.error();
  std::vector<ChainRecord> out;
  for (ChainRecord& c : *all) {
    // The doc embeds the window and counts, so any new evidence changes its hash.
    size_t h = std::hash<std::string>{}(c.doc);
    auto it = std::find_if(emitted_.begin(), emitted_.end(), [&](const auto& p) { return p.first == c.id; });
    if (it != emitted_.end() && it->second == h) continue;
    if (it != emitted_.end()) it->second = h;
    else emitted_.push_back({c.id, h});
    correlator_.mark_published(c.id);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace causeway
