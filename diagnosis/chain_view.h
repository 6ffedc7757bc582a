// What the chain renderers share: the read-only view of one accumulated chain handed to a cause
// module, the chain document being built, and the number formatting every sentence uses.
#pragma once

#include <sqlite3.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/causes/cause_module.h"
#include "diagnosis/correlator_internal.h"

namespace causeway {

struct ChainView {
  const CorrelatorState& s;
  const ChainAcc& a;
  std::string op;      // name of the chain's op
  std::string victim;  // "<op> in <comm> (pid P, thread T)"
  std::string lost;    // the time lost, formatted
  std::string where;   // "inside <op>" or "between CUDA calls (before <op>)"
  double cause_share = 0;  // the cause's own time over the time lost
  int64_t window_ns = 1;
  uint32_t tid = 0;  // the victim thread the chain reports (the one seen most)
};

// One rank that waited for an nccl_straggler: "victims" [{pid, comm, wait_us, host, host_pid}].
struct StragglerVictim {
  uint32_t pid = 0;
  std::string comm;
  int64_t wait_us = 0;
  std::optional<std::string> host;   // merged sessions (diagnosis/chain_hosts.cpp)
  std::optional<int64_t> host_pid;
};

// A chain in memory: typed (cause, severity, culprit) from its module through annotation
// (diagnosis/chain_hosts.h) until chain_record() (diagnosis/chain_json.h) writes it once in the
// docs/INTERFACES.md shape (plus where/lost_us/impact/window).
struct Doc {
  std::string id, summary, recommendation;
  Cause cause = Cause::unknown;
  Severity severity = Severity::low;
  uint32_t pid = 0, tid = 0;
  std::string comm;  // the victim's (emit() fills it)
  std::string op;
  uint16_t op_id = 0;
  int64_t calls = 0, lost_ns = 0, from_ns = 0, to_ns = 0;
  double p50_us = 0, p99_us = 0, slow_share = 0, impact = 0;
  bool between = false;
  std::optional<Culprit> culprit;
  std::optional<std::vector<StragglerVictim>> victims;  // nccl_straggler: the ranks that waited
  std::optional<std::string> host;  // merged sessions: the victim's host and its pid there
  std::optional<int64_t> host_pid;
  std::vector<std::string> evidence;
  std::vector<TimelineItem> timeline;
  uint64_t stack = 0;
  std::vector<std::string> frames;  // the stack's frames, user frame first (emit() loads them)
};

// The chains of one diagnosis being written: session-level causes add theirs through emit().
struct SessionReport {
  CorrelatorState& s;
  sqlite3* db;
  int64_t window_ns;
  std::vector<Doc> out;
};

// Adds a finished chain: fills its victim's comm and its stack's frames, orders its timeline.
void emit(SessionReport& r, Doc d);
// p50/p99/slow share of the chain's op and the "N of M calls slow" evidence line (first).
void op_stats(SessionReport& r, Doc& d, bool add_evidence = true);

// A per-call chain rendered by the module of `Registry` whose evidence `ev` holds: the common
// fields from the accumulated chain, the words from the module (explain + fix).
Doc call_chain_doc(const SessionReport& r, const ChainAcc& a);
ChainView chain_view(const SessionReport& r, const ChainAcc& a, const Doc& d);
void finish_call_chain(SessionReport& r, Doc d, Finding f, std::string fix);

// Renders chain a with the module of its cause, which reads its own typed evidence from
// a.evidence (put there by chain_for<M>) and, when it keeps one, its State from `states`.
template <typename Registry>
void render_call_chain(SessionReport& r, const ChainAcc& a, const typename Registry::States& states = {}) {
  Doc d = call_chain_doc(r, a);
  const ChainView v = chain_view(r, a, d);
  Finding f = Registry::visit(a.cause, a.evidence, [&]<typename M>(const typename M::Evidence& e) {
    if constexpr (HasState<M>) return M::explain(v, e, Registry::template state<M>(states));
    else return M::explain(v, e);
  });
  std::string fix = Registry::visit(a.cause, a.evidence, [&]<typename M>(const typename M::Evidence& e) {
    if constexpr (HasState<M>) return M::fix(v, e, Registry::template state<M>(states));
    else return M::fix(v, e);
  });
  finish_call_chain(r, std::move(d), std::move(f), std::move(fix));
}

Severity severity_for(double impact);
std::string pct(double share);
std::string num(double v, int prec = 1);
std::string with_commas(int64_t v);
std::string hex(int64_t v);
double percentile_us(std::vector<int64_t> v, double q);
uint64_t top_stack(const std::map<uint64_t, int64_t>& m);
// The party with the most time (or, by_hits, the most slow calls, then amount); exclude_pid
// UINT32_MAX excludes none; pid 0 (the idle task) only when include_idle.
const PartyAcc* top_party(const std::map<uint64_t, PartyAcc>& m, uint32_t exclude_pid, bool by_hits, bool include_idle = false);
std::string who(const CorrelatorState& s, uint32_t pid);  // "<comm> (pid P)"
std::string victim_text(const CorrelatorState& s, const Doc& d);  // "<op> in <comm> (pid P, thread T)"

}  // namespace causeway
