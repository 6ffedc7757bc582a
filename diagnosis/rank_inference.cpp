#include "diagnosis/rank_inference.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <span>
#include <string_view>
#include <tuple>

#include "diagnosis/engine_title.h"
#include "tracedb/event_row.h"
#include "tracedb/op_args.h"
#include "tracedb/op_catalog.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

int64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  // Positive, so it never reads as the handle of a real pointer-sized id turned negative.
  return static_cast<int64_t>(h >> 1);
}

}  // namespace

Result<void> RankInference::load(sqlite3* db, int64_t session_id) {
  // Schema 3 added the launcher columns; before it every process goes to add_processes.
  if (auto st = Statement::prepare(db,
                                   "SELECT pid, rank, world_size, rank_source, coalesce(job_id, '') FROM processes "
                                   "WHERE session_id = ?1 AND rank IS NOT NULL AND world_size > 0")) {
    st->bind(1, session_id);
    while (st->step() == SQLITE_ROW) {
      Launcher l;
      l.rank = static_cast<int32_t>(st->col_int(1));
      l.world_size = static_cast<int32_t>(st->col_int(2));
      l.source = st->col_text(3);
      l.job_id = st->col_text(4);
      procs_[static_cast<uint32_t>(st->col_int(0))] = std::move(l);
    }
  }
  auto st = Statement::prepare(db,
                               "SELECT pid, coalesce(ppid, 0), coalesce(comm, ''), coalesce(cmdline, '') FROM processes "
                               "WHERE session_id = ?1");
  if (!st) return {};
  st->bind(1, session_id);
  std::vector<ProcessFacts> facts;
  while (st->step() == SQLITE_ROW)
    facts.push_back({static_cast<uint32_t>(st->col_int(0)), static_cast<uint32_t>(st->col_int(1)), st->col_text(2),
                     st->col_text(3)});
  add_processes(facts);
  return {};
}

void RankInference::add_processes(std::span<const ProcessFacts> procs) {
  // 2. Titles: per (parent, title group), the TP ranks the engine wrote. A group whose ranks
  // repeat is not trusted (two engines under one parent, or a title we misread).
  std::map<std::pair<uint32_t, std::string>, std::vector<std::pair<const ProcessFacts*, int32_t>>> titled;
  std::vector<const ProcessFacts*> rest;
  for (const ProcessFacts& p : procs) {
    if (procs_.count(p.pid)) continue;
    if (auto t = parse_engine_title(p.cmdline); t && p.ppid) titled[{p.ppid, t->group}].push_back({&p, t->tp_rank});
    else rest.push_back(&p);
  }
  for (auto& [key, members] : titled) {
    std::set<int32_t> ranks;
    int32_t top = 0;
    for (auto& [p, rank] : members) ranks.insert(rank), top = std::max(top, rank);
    if (ranks.size() != members.size() || members.size() < 2) {
      for (auto& [p, rank] : members) rest.push_back(p);
      continue;
    }
    // Workers the trace did not record still count: the world is at least the top rank + 1.
    const int32_t world = std::max(static_cast<int32_t>(members.size()), top + 1);
    for (auto& [p, rank] : members)
      procs_[p->pid] = Launcher{rank, world, std::string(kTitleRank), "title:" + std::to_string(key.first) + ":" + key.second};
  }
  // 3. Structure: siblings of one parent with one comm, in pid order.
  std::map<std::pair<uint32_t, std::string>, std::vector<uint32_t>> siblings;
  for (const ProcessFacts* p : rest)
    if (p->ppid) siblings[{p->ppid, p->comm}].push_back(p->pid);
  for (auto& [key, pids] : siblings) {
    if (pids.size() < 2) continue;
    std::sort(pids.begin(), pids.end());
    const auto world = static_cast<int32_t>(pids.size());
    for (int32_t i = 0; i < world; ++i)
      procs_[pids[static_cast<size_t>(i)]] =
          Launcher{i, world, std::string(kStructuralRank), "structural:" + std::to_string(key.first) + ":" + key.second};
  }
}

namespace {

// Two collectives "return together" when their returns are this close: a collective cannot
// finish on one rank before every rank entered, so the ranks of one communicator leave it
// within the transfer's tail, whoever entered late.
constexpr int64_t kTogetherNs = 1'000'000;
// Membership needs this many calls in common and this share of the fewer calls of the two.
constexpr size_t kTogetherMinCalls = 8;
constexpr double kTogetherMinShare = 0.8;

using ReturnKey = std::tuple<uint16_t, int64_t, int64_t>;  // (op, count, datatype)

// How many of a's calls have a call of b of the same kind returning within kTogetherNs.
size_t returned_together(const std::map<ReturnKey, std::vector<int64_t>>& a, const std::map<ReturnKey, std::vector<int64_t>>& b) {
  size_t n = 0;
  for (const auto& [key, ends] : a) {
    auto other = b.find(key);
    if (other == b.end()) continue;
    const std::vector<int64_t>& theirs = other->second;  // sorted
    for (int64_t t : ends) {
      auto it = std::lower_bound(theirs.begin(), theirs.end(), t - kTogetherNs);
      if (it != theirs.end() && *it <= t + kTogetherNs) ++n;
    }
  }
  return n;
}

}  // namespace

void RankInference::add_from_returns(std::span<const CollectiveReturn> calls) {
  std::map<uint32_t, std::map<ReturnKey, std::vector<int64_t>>> by_pid;
  std::map<uint32_t, size_t> calls_of;
  for (const CollectiveReturn& c : calls)
    if (!procs_.count(c.pid)) by_pid[c.pid][{c.op, c.count, c.datatype}].push_back(c.end_ns), ++calls_of[c.pid];
  if (by_pid.size() < 2) return;
  for (auto& [pid, kinds] : by_pid)
    for (auto& [key, ends] : kinds) std::sort(ends.begin(), ends.end());
  // Union-find over the pids that return together.
  std::vector<uint32_t> pids;
  for (auto& [pid, kinds] : by_pid) pids.push_back(pid);
  std::vector<size_t> root(pids.size());
  for (size_t i = 0; i < root.size(); ++i) root[i] = i;
  auto find = [&](size_t i) {
    while (root[i] != i) i = root[i] = root[root[i]];
    return i;
  };
  for (size_t i = 0; i < pids.size(); ++i)
    for (size_t j = i + 1; j < pids.size(); ++j) {
      const size_t fewer = std::min(calls_of[pids[i]], calls_of[pids[j]]);
      const size_t n = returned_together(by_pid[pids[i]], by_pid[pids[j]]);
      if (n >= kTogetherMinCalls && static_cast<double>(n) >= kTogetherMinShare * static_cast<double>(fewer))
        root[find(j)] = find(i);
    }
  std::map<size_t, std::vector<uint32_t>> groups;
  for (size_t i = 0; i < pids.size(); ++i) groups[find(i)].push_back(pids[i]);
  for (auto& [r, members] : groups) {
    if (members.size() < 2) continue;
    const auto world = static_cast<int32_t>(members.size());
    for (int32_t i = 0; i < world; ++i)
      procs_[members[static_cast<size_t>(i)]] =
          Launcher{i, world, std::string(kTimingRank), "timing:" + std::to_string(members.front())};
  }
}

Result<void> RankInference::load_from_returns(sqlite3* db, int64_t session_id) {
  std::string ops;
  for (const OpInfo& op : op_catalog())
    if (is_collective_op(op.id)) ops += (ops.empty() ? "" : ",") + std::to_string(op.id);
  // The processes that ran collectives, from the per-second rollups (no scan of the events
  // when the session has none, or when fewer than two lack a rank).
  auto who = Statement::prepare(db, "SELECT DISTINCT pid FROM rollups WHERE session_id = ?1 AND op_id IN (" + ops + ")");
  if (!who) return who.error();
  who->bind(1, session_id);
  std::string pids;
  size_t unranked = 0;
  while (who->step() == SQLITE_ROW) {
    const auto pid = static_cast<uint32_t>(who->col_int(0));
    if (procs_.count(pid)) continue;
    pids += (pids.empty() ? "" : ",") + std::to_string(pid);
    ++unranked;
  }
  if (unranked < 2) return {};
  // A return's pid, op and end, and its args through coll_args() (the one column list,
  // tracedb/event_columns.h); rank < 0: the rank was not in the call.
  static constexpr EventColumns<10> kReturnColumns{{EventCol::pid, EventCol::op_id, EventCol::ts_ns, EventCol::dur_ns,
                                                    EventCol::a0, EventCol::a1, EventCol::a2, EventCol::a3, EventCol::a4,
                                                    EventCol::a5}};
  auto st = Statement::prepare(db, "SELECT " + kReturnColumns.sql() + " FROM events WHERE session_id = ?1 AND op_id IN (" + ops +
                                       ") AND pid IN (" + pids + ") AND " + CW_ARG_COLUMN("rank", arg_layout::coll) +
                                       " < 0 ORDER BY id LIMIT ?2");
  if (!st) return st.error();
  st->bind(1, session_id);
  st->bind(2, kTimingReadLimit);
  std::vector<CollectiveReturn> calls;
  while (st->step() == SQLITE_ROW) {
    const CallRecord e = decode_event(st->get(), kReturnColumns).call;
    const CollArgs c = coll_args(e);
    calls.push_back({e.pid, e.op, c.count, c.datatype, e.ts_ns + e.dur_ns});
  }
  add_from_returns(calls);
  return {};
}

void RankInference::set_launcher(uint32_t pid, int32_t rank, int32_t world_size, std::string source, std::string job_id) {
  procs_[pid] = Launcher{rank, world_size, std::move(source), std::move(job_id)};
}

void RankInference::restore_stream(uint32_t pid, int64_t handle, int64_t comm, int64_t offset) {
  if (comm_of_handle_.try_emplace({pid, handle}, comm).second) ++handles_seen_[pid];
  offset_[{pid, comm}] = offset;
}

void RankInference::restore_history(int64_t comm, int64_t seq, int64_t end_ns) { history_[comm].emplace(seq, end_ns); }

bool RankInference::resolve(CollectiveEntry& e, int64_t end_ns) {
  if (e.rank >= 0) return false;
  auto p = procs_.find(e.pid);
  if (p == procs_.end()) return false;
  auto [it, inserted] = comm_of_handle_.try_emplace({e.pid, e.comm}, 0);
  if (inserted) {
    int ordinal = handles_seen_[e.pid]++;
    it->second = fnv1a(p->second.job_id + "\n" + std::to_string(p->second.world_size) + "\n" + std::to_string(ordinal));
  }
  e.comm = it->second;
  e.rank = p->second.rank;
  e.nranks = p->second.world_size;
  resolved_pids_.insert(e.pid);
  pending_[{{e.pid, e.comm}, e.seq}] = end_ns;
  return true;
}

namespace {

constexpr size_t kMatchPoints = 32;     // a rank's first calls compared with the job's
constexpr size_t kHistory = 4096;       // aligned return times kept per communicator

// Median |return time of the stream's call s - the job's call s + off| over the stream's
// first points; INT64_MAX when fewer than half of them have a counterpart.
int64_t match_error(std::span<const std::pair<int64_t, int64_t>> pts, const std::map<int64_t, int64_t>& ref, int64_t off) {
  std::vector<int64_t> d;
  size_t n = std::min(pts.size(), kMatchPoints);
  for (size_t i = 0; i < n; ++i)
    if (auto r = ref.find(pts[i].first + off); r != ref.end()) d.push_back(std::llabs(r->second - pts[i].second));
  if (d.size() * 2 < n || d.empty()) return INT64_MAX;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

}  // namespace

void RankInference::align(std::vector<CollectiveEntry>& entries) {
  if (pending_.empty()) return;
  // Per communicator, per stream: (traced seq, return time) in seq order.
  std::map<int64_t, std::map<StreamKey, std::vector<std::pair<int64_t, int64_t>>>> by_comm;
  for (auto& [k, end] : pending_) by_comm[k.first.second][k.first].push_back({k.second, end});
  for (auto& [comm, streams] : by_comm) {
    std::map<int64_t, int64_t>& ref = history_[comm];
    auto add = [&](const std::vector<std::pair<int64_t, int64_t>>& pts, int64_t off) {
      for (auto& [seq, end] : pts) ref.emplace(seq + off, end);
    };
    for (auto& [key, pts] : streams)
      if (auto o = offset_.find(key); o != offset_.end()) add(pts, o->second);
    // The first rank seen anchors the job's numbering: the one whose first call returned first.
    if (ref.empty()) {
      auto anchor = std::min_element(streams.begin(), streams.end(),
                                     [](const auto& a, const auto& b) { return a.second.front().second < b.second.front().second; });
      offset_[anchor->first] = 0;
      add(anchor->second, 0);
    }
    for (auto& [key, all] : streams) {
      if (offset_.count(key)) continue;
      // A stream that starts before the numbering it joins (a host attached earlier, shipped
      // after one attached later: fleet/ship_table.cpp) is matched from its call that returned
      // nearest the numbering's first one.
      std::span<const std::pair<int64_t, int64_t>> pts(all);
      if (const int64_t first = ref.begin()->second; pts.front().second < first) {
        auto near = std::min_element(pts.begin(), pts.end(), [first](const auto& x, const auto& y) {
          return std::llabs(x.second - first) < std::llabs(y.second - first);
        });
        pts = pts.subspan(static_cast<size_t>(near - pts.begin()));
      }
      // Guess from the call whose return is nearest the stream's first, then keep the shift
      // (within two of it) that matches its first calls best.
      int64_t guess = 0, best = INT64_MAX;
      for (auto& [seq, end] : ref)
        if (std::llabs(end - pts.front().second) < best) {
          best = std::llabs(end - pts.front().second);
          guess = seq - pts.front().first;
        }
      int64_t chosen = guess, chosen_err = INT64_MAX;
      for (int64_t off = guess - 2; off <= guess + 2; ++off)
        if (int64_t err = match_error(pts, ref, off); err < chosen_err) {
          chosen_err = err;
          chosen = off;
        }
      offset_[key] = chosen;
      add(all, chosen);
    }
    while (ref.size() > kHistory) ref.erase(ref.begin());
  }
  for (CollectiveEntry& e : entries)
    if (pending_.count({{e.pid, e.comm}, e.seq})) e.seq += offset_[{e.pid, e.comm}];
  pending_.clear();
}

std::string RankInference::source(uint32_t pid) const {
  auto p = procs_.find(pid);
  return p == procs_.end() || !resolved_pids_.count(pid) ? std::string() : p->second.source;
}

std::string RankInference::label(uint32_t pid, int32_t rank) const {
  if (!structural(pid)) return "rank " + std::to_string(rank);
  auto p = procs_.find(pid);
  return "worker " + std::to_string(p->second.rank + 1) + " of " + std::to_string(p->second.world_size) + " by pid order";
}

}  // namespace causeway
