// Turns the correlator's accumulated evidence into typed chains (chain_view.h Doc): each
// per-call chain is rendered by its cause module (diagnosis/causes/), session-level causes emit
// their own; after annotation (chain_hosts.h) each is written once (chain_json.h). Every sentence states a number the trace holds; where the data names no culprit
// the chain has none, and where the evidence is weak the chain is LOW or `unknown`.
#include <algorithm>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/argmax.h"
#include "diagnosis/causes/registry.h"
#include "diagnosis/chain_hosts.h"
#include "diagnosis/chain_json.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/frames.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "common/untrusted_json.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

namespace {

constexpr double kHigh = 0.05;    // wall time lost >= 5% of the window
constexpr double kMedium = 0.01;  // >= 1%

std::vector<TimelineItem> merged_timeline(const ChainAcc& a) {
  std::vector<TimelineItem> t;
  for (const auto& w : a.worst) t.insert(t.end(), w.items.begin(), w.items.end());
  return t;
}

uint32_t main_tid(const ChainAcc& a) { return key_of_largest(a.tids); }

}  // namespace

Severity severity_for(double impact) { return impact >= kHigh ? Severity::high : impact >= kMedium ? Severity::medium : Severity::low; }

std::string pct(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", share * 100.0);
  return b;
}

std::string num(double v, int prec) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string hex(int64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v), out;
  int n = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (n && n % 3 == 0 && *it != '-') out.push_back(',');
    out.push_back(*it);
    ++n;
  }
  return {out.rbegin(), out.rend()};
}

double percentile_us(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - (q > 0 ? 1 : 0));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) / 1000.0;
}

std::vector<std::string> load_stack(sqlite3* db, uint64_t id) {
  std::vector<std::string> frames;
  if (!id) return frames;
  auto st = Statement::prepare(db, "SELECT frames FROM stacks WHERE id = ?1");
  if (!st) return frames;
  st->bind(1, static_cast<int64_t>(id));
  if (st->step() != SQLITE_ROW) return frames;
  auto j = parse_untrusted_json_or_null(st->col_text(0));
  if (!j.is_array()) return frames;
  std::vector<std::string> raw;
  for (const auto& f : j)
    if (f.is_string()) raw.push_back(f.get<std::string>());
  // User frame first (the Python line, else the program's own native frame): the call site.
  for (const auto& f : user_first_texts(raw)) frames.push_back(sanitize_untrusted(f, 200));
  return frames;
}

uint64_t top_stack(const std::map<uint64_t, int64_t>& m) { return key_of_largest(m); }

const PartyAcc* top_party(const std::map<uint64_t, PartyAcc>& m, uint32_t exclude_pid, bool by_hits, bool include_idle) {
  const auto* top = argmax_by(
      m,
      [by_hits](const auto& e) {
        const PartyAcc& p = e.second;
        return by_hits ? std::pair(p.hits, p.amount) : std::pair(p.ns, int64_t{0});
      },
      [&](const auto& e) {
        const PartyAcc& p = e.second;
        return !(p.pid == exclude_pid && exclude_pid != UINT32_MAX) && !(p.pid == 0 && !include_idle);
      });
  return top ? &top->second : nullptr;
}

std::string who(const CorrelatorState& s, uint32_t pid) { return s.comm_of(pid) + " (pid " + std::to_string(pid) + ")"; }

std::string victim_text(const CorrelatorState& s, const Doc& d) {
  return d.op + " in " + s.comm_of(d.pid) + " (pid " + std::to_string(d.pid) + (d.tid ? ", thread " + std::to_string(d.tid) : "") + ")";
}

Doc call_chain_doc(const SessionReport& r, const ChainAcc& a) {
  Doc d;
  d.id = a.id;
  d.cause = a.cause;
  d.pid = a.pid;
  d.tid = main_tid(a);
  d.op_id = a.op;
  d.op = op_name(a.op);
  d.calls = a.calls;
  d.lost_ns = a.lost_ns;
  d.from_ns = a.first_ns;
  d.to_ns = a.last_ns;
  d.between = a.between_calls;
  d.impact = static_cast<double>(a.lost_ns) / static_cast<double>(r.window_ns);
  d.severity = severity_for(d.impact);
  d.stack = top_stack(a.stacks);
  d.timeline = merged_timeline(a);
  return d;
}

ChainView chain_view(const SessionReport& r, const ChainAcc& a, const Doc& d) {
  return ChainView{r.s, a, d.op, victim_text(r.s, d), format_duration_ns(a.lost_ns),
                   a.between_calls ? "between CUDA calls (before " + d.op + ")" : "inside " + d.op,
                   a.lost_ns > 0 ? static_cast<double>(a.off_ns) / static_cast<double>(a.lost_ns) : 0, r.window_ns,
                   d.tid};
}

void finish_call_chain(SessionReport& r, Doc d, Finding f, std::string fix) {
  if (d.impact < f.min_impact && !f.report_below_min_impact && !r.s.published.count(d.id)) return;
  if (f.op) {
    d.op_id = *f.op;
    d.op = op_name(*f.op);
  }
  if (f.max_severity) d.severity = std::min(d.severity, *f.max_severity);
  d.summary = std::move(f.summary);
  d.culprit = std::move(f.culprit);
  d.evidence = std::move(f.evidence);
  d.recommendation = std::move(fix);
  d.evidence.push_back(format_duration_ns(d.lost_ns) + " lost in total, " + pct(d.impact) + " of the " +
                       format_duration_ns(r.window_ns) + " analyzed");
  op_stats(r, d, f.calls_line);
  emit(r, std::move(d));
}

void op_stats(SessionReport& c, Doc& d, bool add_evidence) {
  auto it = c.s.ops.find(op_key(d.pid, d.op_id));
  if (it == c.s.ops.end() || it->second.count == 0) return;
  const OpAcc& o = it->second;
  d.p50_us = static_cast<double>(o.hist.percentile(0.50, o.min, o.max)) / 1000.0;
  d.p99_us = static_cast<double>(o.hist.percentile(0.99, o.min, o.max)) / 1000.0;
  d.slow_share = std::min(1.0, static_cast<double>(d.calls) / static_cast<double>(o.count));
  if (!add_evidence) return;
  d.evidence.insert(d.evidence.begin(),
                    with_commas(d.calls) + " of " + with_commas(static_cast<int64_t>(o.count)) + " " + d.op + " calls " +
                        (d.between ? "preceded by a host stall" : "slow") + " (" + pct(d.slow_share) + "); all calls: p50 " +
                        format_duration_ns(static_cast<int64_t>(d.p50_us * 1000)) + ", p99 " +
                        format_duration_ns(static_cast<int64_t>(d.p99_us * 1000)) + ", max " +
                        format_duration_ns(static_cast<int64_t>(o.max)));
}

void emit(SessionReport& c, Doc d) {
  d.comm = c.s.comm_of(d.pid);
  d.frames = load_stack(c.db, d.stack);
  std::sort(d.timeline.begin(), d.timeline.end(), [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
  if (d.timeline.size() > 24) d.timeline.resize(24);
  c.out.push_back(std::move(d));
}

Result<std::vector<ChainRecord>> build_chains(CorrelatorState& s, CauseStates& causes, sqlite3* db) {
  // Nothing analyzed yet (an empty session): analyzed_to - analyzed_from would overflow.
  if (s.analyzed_to == INT64_MIN || s.analyzed_to <= s.analyzed_from) return std::vector<ChainRecord>{};
  SessionReport r{s, db, s.analyzed_to - s.analyzed_from, {}};
  for (auto& [id, a] : s.chains) render_call_chain<CallCauses>(r, a, causes.call);
  SessionCauses::report_all(r, causes.session);
  std::stable_sort(r.out.begin(), r.out.end(), [](const Doc& a, const Doc& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.impact > b.impact;
  });
  if (auto a = annotate_hosts_and_ranks(r.out, db, s); !a) return a.error();  // diagnosis/chain_hosts.h
  std::vector<ChainRecord> out;
  out.reserve(r.out.size());
  for (const Doc& d : r.out) out.push_back(chain_record(d, cause_name(d.cause)));
  return out;
}

}  // namespace causeway
