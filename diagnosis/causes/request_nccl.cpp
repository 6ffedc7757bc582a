#include "diagnosis/causes/request_nccl.h"

#include <algorithm>

#include "common/argmax.h"

#include "diagnosis/collectives.h"
#include "diagnosis/event_window.h"
#include "diagnosis/rank_inference.h"
#include "diagnosis/engine_series.h"
#include "tracedb/event_row.h"
#include "tracedb/op_args.h"
#include "tracedb/op_catalog.h"
#include "tracedb/sqlite_handle.h"
#include "diagnosis/causes/request_cause_util.h"
#include "diagnosis/request_cpu_waits.h"
#include "diagnosis/request_evidence.h"

namespace causeway::requests {
namespace {

// A collective's ranks enter within one forward pass: entries this long before (or after) the
// slow part still belong to a pass whose wait overlaps it (a late rank's entry can fall just
// after a token time rebuilt from µs gaps).
constexpr int64_t kPassLookbackNs = 2'000'000'000;

std::string collective_ops() {
  std::string in;
  for (const OpInfo& op : op_catalog())
    if (op.family == OpFamily::collective) in += (in.empty() ? "" : ",") + std::to_string(op.id);
  return in;
}

// The columns a collective is read from: its times and ids, and its args through coll_args()
// (tracedb/op_args.h), the one column list (tracedb/event_columns.h).
constexpr EventColumns<11> kCollectiveColumns{{EventCol::ts_ns, EventCol::dur_ns, EventCol::pid, EventCol::tid,
                                               EventCol::op_id, EventCol::a0, EventCol::a1, EventCol::a2, EventCol::a3,
                                               EventCol::a4, EventCol::a5}};

// A collective row as the grouping reads it.
CollectiveEntry entry_of(const CallRecord& e) {
  const CollArgs c = coll_args(e);
  return {c.comm, c.seq, e.pid, e.tid, c.rank, c.nranks, e.op, e.ts_ns, e.ts_ns + e.dur_ns};
}

std::string collective_select() { return "SELECT " + kCollectiveColumns.sql() + " FROM events WHERE session_id = ?1 "; }

// The pid with the most time (the first of equals); `by_pid` is not empty.
uint32_t max_by_value(const std::map<uint32_t, double>& by_pid) {
  return argmax_by(by_pid, [](const auto& e) { return e.second; })->first;
}

// Entries resolved between two alignments (the correlator aligns chunk by chunk too).
constexpr size_t kAlignBatch = 65536;

}  // namespace

std::vector<CollectiveEntry> NcclStragglers::window(const std::vector<uint32_t>& pids, int64_t from, int64_t to) {
  std::vector<CollectiveEntry> entries;
  auto ids = event_ids_for_window(db_, session_id_, from - kPassLookbackNs, to + kPassLookbackNs);
  if (!ids || ids->empty()) return entries;
  auto st = Statement::prepare(db_, collective_select() + "AND id BETWEEN ?2 AND ?3 AND ts_ns BETWEEN ?4 AND ?5 AND op_id IN (" +
                                        collective_ops() + ") AND pid IN (" + sql_id_list(pids) + ")");
  if (!st) return entries;
  st->bind(1, session_id_);
  st->bind(2, ids->lo);
  st->bind(3, ids->hi);
  st->bind(4, from - kPassLookbackNs);
  st->bind(5, to + kPassLookbackNs);
  while (st->step() == SQLITE_ROW) entries.push_back(entry_of(decode_event(st->get(), kCollectiveColumns).call));
  return entries;
}

// The engine's collectives over the whole session in id order, each batch resolved and then
// aligned as the correlator does (diagnosis/rank_inference.h); by entry time.
const NcclStragglers::Resolved& NcclStragglers::resolved(const std::vector<uint32_t>& pids) {
  auto found = resolved_.find(pids);
  if (found != resolved_.end()) return found->second;
  Resolved& r = resolved_[pids];
  std::vector<CollectiveEntry>& out = r.entries;
  RankInference ranks;
  if (!ranks.load(db_, session_id_)) return r;
  auto st = Statement::prepare(db_, collective_select() + "AND op_id IN (" + collective_ops() + ") AND pid IN (" +
                                        sql_id_list(pids) + ") ORDER BY id");
  if (!st) return r;
  st->bind(1, session_id_);
  // Read once: the communicators of ranks that no source names come from the calls themselves.
  std::vector<std::pair<CollectiveEntry, int64_t>> rows;  // entry, return time
  std::vector<CollectiveSpan> unranked;
  while (st->step() == SQLITE_ROW) {
    const CallRecord e = decode_event(st->get(), kCollectiveColumns).call;
    rows.emplace_back(entry_of(e), e.ts_ns + e.dur_ns);
    if (rows.back().first.rank < 0) unranked.push_back(collective_span(e));
  }
  ranks.add_from_collectives(unranked);
  if (!ranks.has_ranks()) return r;
  std::vector<CollectiveEntry> batch;
  auto flush = [&] {
    ranks.align(batch);
    out.insert(out.end(), batch.begin(), batch.end());
    batch.clear();
  };
  for (auto& [entry, end_ns] : rows) {
    batch.push_back(entry);
    ranks.resolve(batch.back(), end_ns);
    if (batch.size() >= kAlignBatch) flush();
  }
  flush();
  std::sort(out.begin(), out.end(), [](const CollectiveEntry& a, const CollectiveEntry& b) { return a.ts_ns < b.ts_ns; });
  r.ranks = std::move(ranks);
  return r;
}

// A late rank's lateness is the CPU's when its thread was runnable while outsiders held its CPU
// (diagnosis/request_cpu_waits.h) for at least half of it, over the lateness and as long again
// before it (the rank's share of the pass it lost to the wait): it would have entered with the
// others had it run (docs/INFERENCE.md "Claims on one gap").
bool NcclStragglers::late_for_cpu(RequestEvidence& ev, const std::vector<uint32_t>& pids, const CollectiveEntry& late,
                                  int64_t lateness_ns, CpuStolen& stolen) {
  const CpuWaits w = read_cpu_waits(db_, session_id_, pids, late.tid, late_for_cpu_window_from(late, lateness_ns), late.ts_ns);
  stolen = stolen_by(w, pids, ev.tracer_pid());
  return stolen.outsiders_ns * 2 >= static_cast<double>(lateness_ns);
}

void NcclStragglers::claim(RequestEvidence& ev, const std::vector<uint32_t>& pids, int64_t from, int64_t to,
                           std::vector<CauseClaim>& out) {
  if (pids.size() < 2 || to <= from) return;  // one process: no ranks to wait for
  std::vector<CollectiveEntry> entries = window(pids, from, to);
  if (entries.empty()) return;
  // A rank whose communicator was formed before the trace: its collectives group across
  // processes only once resolved, from the session's first collective on.
  const RankInference* inferred = nullptr;  // where the ranks came from, when not from init
  if (std::any_of(entries.begin(), entries.end(), [](const CollectiveEntry& e) { return e.rank < 0; })) {
    const Resolved& r = resolved(pids);
    const auto& all = r.entries;
    auto lo = std::lower_bound(all.begin(), all.end(), from - kPassLookbackNs,
                               [](const CollectiveEntry& e, int64_t t) { return e.ts_ns < t; });
    auto hi = std::upper_bound(lo, all.end(), to + kPassLookbackNs,
                               [](int64_t t, const CollectiveEntry& e) { return t < e.ts_ns; });
    if (lo != hi) entries.assign(lo, hi), inferred = &r.ranks;
  }
  mark_step_starts(entries);
  // The ranks that entered waited from the second-last entry (the pass was ready but for
  // one rank) to the straggler's: the late rank's (nccl_straggler), or, when the late rank
  // could not get a CPU, whoever held it (cpu_contention, the late rank its victim).
  std::vector<std::pair<int64_t, int64_t>> spans, cpu_spans;
  std::map<uint32_t, double> late_by_pid, cpu_late_by_pid;
  std::map<uint32_t, const CollectiveEntry*> entry_of;
  CpuStolen stolen;                                            // from every rank late for a CPU
  std::map<uint32_t, std::map<uint32_t, double>> stolen_from;  // late rank -> culprit -> ns
  for (const CollectiveGroup& g : group_collectives(entries)) {
    if (!g.has_straggler) continue;
    const CollectiveEntry& late = entries[g.straggler];
    const int64_t waited_from = g.last_entry_ns - g.lateness_ns;
    const int64_t a = std::max(waited_from, from), b = std::min(g.last_entry_ns, to);
    if (b <= a) continue;
    if (CpuStolen s; late_for_cpu(ev, pids, late, g.lateness_ns, s)) {
      cpu_spans.emplace_back(waited_from, g.last_entry_ns);
      cpu_late_by_pid[late.pid] += static_cast<double>(b - a);
      for (const auto& [pid, ns] : s.by_culprit) stolen.by_culprit[pid] += ns, stolen_from[late.pid][pid] += ns;
      stolen.outsiders_ns += s.outsiders_ns;
      stolen.held_ns += s.held_ns;
      stolen.tracer_ns += s.tracer_ns;
      continue;
    }
    spans.emplace_back(waited_from, g.last_entry_ns);
    late_by_pid[late.pid] += static_cast<double>(b - a);
    entry_of[late.pid] = &late;
  }
  if (!cpu_spans.empty() && stolen.top()) {
    Culprit culprit = cpu_contention_culprit(ev, stolen);
    // The victim is the late rank the culprit stole the most from: ranks late behind other
    // processes add to the claim's time, they are not the culprit's victim.
    const uint32_t hog = stolen.top();
    uint32_t victim = max_by_value(cpu_late_by_pid);
    double most = 0;
    for (const auto& [rank_pid, by] : stolen_from)
      if (auto it = by.find(hog); it != by.end() && it->second > most) most = it->second, victim = rank_pid;
    culprit.victim = CulpritVictim{victim, ev.comm(victim)};
    out.push_back({RequestCause::cpu_contention, covered_ns(std::move(cpu_spans), from, to), std::move(culprit),
                   NcclStragglerRequestCause::tier});
  }
  if (spans.empty()) return;
  const double lost = covered_ns(std::move(spans), from, to);
  const uint32_t top = max_by_value(late_by_pid);
  double total = 0;
  for (const auto& [pid, ns] : late_by_pid) total += ns;
  const CollectiveEntry& e = *entry_of[top];
  std::string source = e.rank < 0 ? "" : inferred ? inferred->source(e.pid) : "";
  if (e.rank >= 0 && source.empty()) source = "init";
  Culprit culprit{.pid = top,
                  .comm = ev.comm(top),
                  .share_kind = ShareKind::claimed,
                  .share = total > 0 ? late_by_pid[top] / total : 0};
  culprit.nranks = e.nranks;
  if (!source.empty()) culprit.rank_source = source;
  if (e.rank >= 0 && rank_number_known(source)) culprit.rank = e.rank;
  out.push_back({RequestCause::nccl_straggler, lost, std::move(culprit)});
}

void NcclStragglerRequestCause::find(State& st, RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
  if (!st.stragglers) st.stragglers = std::make_unique<NcclStragglers>(ev.db(), ev.session_id());
  st.stragglers->claim(ev, ev.engine_pids(part.server_pid), part.from_ns, part.to_ns, out);
}

std::string nccl_rank_phrase(bool has_rank_source, std::optional<int64_t> rank, int64_t nranks) {
  if (!has_rank_source) return "";
  if (!rank) return "rank unknown";
  return "rank " + std::to_string(*rank) + " of " + std::to_string(nranks);
}

RequestChainWords NcclStragglerRequestCause::chain_words(const Culprit& culprit) {
  RequestChainWords w;
  if (std::string line = nccl_rank_evidence(culprit); !line.empty()) w.evidence.push_back(std::move(line));
  return w;
}

std::string nccl_rank_evidence(const Culprit& culprit) {
  const std::string phrase = nccl_rank_phrase(culprit.rank_source.has_value(), culprit.rank, culprit.nranks.value_or(0));
  if (phrase.empty()) return "";
  const std::string& source = *culprit.rank_source;
  const std::string pid = std::to_string(culprit.pid.value_or(0));
  if (source == kTimingRank)
    return "late worker pid " + pid + ", " + phrase +
           ": its communicator was found from the collectives themselves (same op, count and datatype overlapping and "
           "completing together, call after call); no traced init, launcher variable or process title gives rank numbers";
  if (source == kStructuralRank)
    return "late worker pid " + pid + ", " + phrase + ": its communicator was taken from its siblings of one parent and comm; "
           "no source gives rank numbers";
  return "late worker pid " + pid + ", " + phrase + " (rank from " + source + ")";
}

const char* NcclStragglerRequestCause::recommendation([[maybe_unused]] const Culprit& culprit) {
  return "One tensor-parallel rank starts the forward pass late and every other rank waits for it in the all-reduce: "
         "look at what that rank's process does before its collective (its own CPU, another process on its core, I/O), "
         "and pin the workers to their own cores.";
}

}  // namespace causeway::requests
