// What every detector of a chunk sees (docs/DIAGNOSIS.md "Engine"): the per-thread timeline
// (on/off-CPU, wakers), the host-event index (block I/O, faults/page allocations, OOM kills,
// retransmits, GPU submissions) and the NCCL collective groups — built once per chunk by the
// correlator and handed read-only to every cause module — plus the accumulator a detector
// writes its claim into, and the helpers that accumulate a slow call into a chain.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "diagnosis/collectives.h"
#include "diagnosis/correlator_internal.h"
#include "diagnosis/thread_timeline.h"

namespace causeway {

// Host events of the loaded window, by kind, in time order.
struct HostIndex {
  std::vector<const Ev*> blocks, retransmits, page_allocs, ooms;
  int64_t max_block_dur = 0, max_alloc_dur = 0;
  std::unordered_map<uint32_t, std::vector<int64_t>> submits;  // pid -> submit timestamps
};

// What we know about one slow call (or gap) before choosing its cause.
struct Slow {
  const Ev* e = nullptr;
  int64_t from = 0, to = 0;  // the interval examined: the call, or the gap before it
  int64_t excess = 0;        // time lost against the baseline
  int64_t median = 0;
  bool gap = false;
  bool startup = false;
  int64_t floor = 0;  // least off-CPU time that can be a host cause
  OffCpuSummary off;
};

struct ChunkContext {
  CorrelatorState& s;  // accumulators (chains, GPU sharing) and names
  const ThreadTimelines& tl;
  const HostIndex& hx;
  const std::vector<CollectiveEntry>& entries;
  const std::vector<CollectiveGroup>& groups;
  const std::map<std::pair<int64_t, int64_t>, size_t>& group_of;        // (comm, seq) -> group
  const std::unordered_map<uint32_t, std::pair<int64_t, int64_t>>& last_coll;  // tid -> (comm, seq) of its last collective
};

// How the walk judged one traced call (docs/DIAGNOSIS.md "Engine"), for the observe() hooks.
enum class CallVerdict : uint8_t {
  normal,     // neither an outlier, a host stall nor a cold start: an ordinary call
  no_loss,    // flagged, but nothing lost against its baseline
  claimed,    // a per-call cause took it (a host cause, cold start, or an outlier's detector)
  unclaimed,  // examined as slow but no per-call cause took it: a host stall none explains in a
              // call that is no outlier, or an expensive device alloc/free (the allocator's)
};

// What a cause module's observe() hook sees of one outermost traced call, after arbitration.
struct ObserveContext {
  const ChunkContext& chunk;
  bool startup = false;  // within startup_ns of its process's first call
  CallVerdict verdict = CallVerdict::normal;
};

// An outlier needs only this much of a host cause (short EEVDF slices still count).
constexpr int64_t kOutlierHostFloorNs = 50'000;

template <typename F>
void for_overlapping(const std::vector<const Ev*>& v, int64_t max_dur, int64_t a, int64_t b, F f) {
  auto lo = std::lower_bound(v.begin(), v.end(), a - max_dur, [](const Ev* e, int64_t t) { return e->ts < t; });
  for (; lo != v.end() && (*lo)->ts < b; ++lo)
    if ((*lo)->end() > a || ((*lo)->dur == 0 && (*lo)->ts >= a)) f(**lo);
}

int64_t count_in(const std::vector<int64_t>& ts, int64_t a, int64_t b);

// The chain of cause module M for (victim, op, in-call or between calls), created on first use,
// and its typed evidence.
template <typename M>
std::pair<ChainAcc&, typename M::Evidence&> chain_for(CorrelatorState& s, uint32_t pid, uint16_t op, bool between) {
  std::string id = "s" + std::to_string(s.session_id) + "-" + std::string(M::name) + "-" + std::to_string(pid) +
                   (op ? "-" + op_name(op) : std::string()) + (between ? "-gap" : "");
  auto [it, fresh] = s.chains.try_emplace(id);
  ChainAcc& c = it->second;
  if (fresh) {
    c.id = id;
    c.cause = M::id;
    c.cause_name = M::name;
    c.pid = pid;
    c.op = op;
    c.between_calls = between;
    c.evidence.template emplace<typename M::Evidence>();
  }
  return {c, *std::any_cast<typename M::Evidence>(&c.evidence)};
}

void add_party(std::map<uint64_t, PartyAcc>& m, uint32_t pid, uint32_t tid, int64_t ns, int64_t amount = 0);
// Keeps the few slowest calls' timelines (the chain shows the worst).
void add_sample(ChainAcc& c, int64_t excess, std::vector<TimelineItem> items);
// Accumulates the common part of a slow call into chain c: lost time, the cause's own time.
void note_call(CorrelatorState& s, ChainAcc& c, const Slow& w, int64_t lost, int64_t cause_ns);
// Records which cause took `lost` from call e (or the gap before it): the call_causes table.
void claim_call(CorrelatorState& s, const Ev& e, bool gap, int64_t lost, std::string_view cause, const std::string& chain_id);
// The call's (or gap's) own timeline items: entered, returned.
std::vector<TimelineItem> call_frame(const CorrelatorState& s, const Slow& w);
// Runnable time of tid inside [a, b] and who ran on its CPU meanwhile (by pid).
void runnable_culprits(const ThreadTimelines& tl, uint32_t tid, int64_t a, int64_t b, std::vector<RunShare>& out,
                       std::map<int32_t, int64_t>* cpus, std::vector<std::pair<const OffCpuInterval*, int64_t>>* ivs);
// Which other processes put work on a GPU during [a, b], with how many operations.
void other_submitters(const HostIndex& hx, uint32_t self, int64_t a, int64_t b, std::vector<std::pair<uint32_t, int64_t>>& out);

}  // namespace causeway
