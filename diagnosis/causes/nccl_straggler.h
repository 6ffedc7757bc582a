// nccl_straggler: the rank that enters collectives last. Collectives are judged as groups across
// ranks (diagnosis/collectives.h matches them by (comm, seq)), so this module observes each
// chunk's groups, not single events: each group is counted once, in the chunk where its first
// rank entered. The waits it causes on other ranks are claimed under its chain id.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnosis/causes/cause_module.h"
#include "diagnosis/correlator_internal.h"

namespace causeway {

struct ChunkContext;  // diagnosis/chunk_context.h
struct SessionReport;  // diagnosis/chain_view.h

struct StragglerAcc {
  int64_t comm = 0;
  uint32_t pid = 0, tid = 0;
  int32_t rank = -1;
  int32_t nranks = 0;
  uint16_t op = 0;
  int64_t late = 0, preempted = 0, wait_ns = 0;
  std::vector<int64_t> lateness;
  std::map<uint32_t, int64_t> victims_wait;  // pid -> ns waited for this rank
  std::map<uint64_t, PartyAcc> preempters;   // pid << 32 -> stolen ns
  std::map<int32_t, int64_t> cpus;
  int64_t own_runnable_ns = 0, own_sleep_ns = 0, own_d_ns = 0, own_on_cpu_ns = 0;
  std::vector<TimelineItem> example;
  int64_t example_lateness = 0;
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
};

struct CommAcc {
  int64_t collectives = 0;
  std::map<uint32_t, int64_t> entries_by_pid;
};

struct NcclStraggler {
  static constexpr Cause id = Cause::nccl_straggler;
  static constexpr std::string_view name = "nccl_straggler";
  struct State {
    std::map<std::pair<int64_t, uint32_t>, StragglerAcc> stragglers;  // (comm, pid)
    // Late entries of ranks that could not get their CPU (straggler_late_for_cpu): reported as
    // cpu_contention, the late rank its victim.
    std::map<std::pair<int64_t, uint32_t>, StragglerAcc> cpu_late;
    std::map<int64_t, CommAcc> comms;
    std::map<std::pair<int64_t, int64_t>, int64_t> seen_groups;  // (comm, seq) counted -> first entry ns
  };
  // The collective groups of chunk [cf, ct): who entered last, by how much, and what its thread
  // did before entering.
  static void observe_chunk(State& st, const ChunkContext& cx, int64_t cf, int64_t ct);
  static void report(SessionReport& r, const State& st);
};

// Its chain id: the waits it causes on other ranks are claimed under it (call_causes).
std::string nccl_straggler_chain_id(int64_t session_id, uint32_t straggler_pid, int64_t comm);

// Whether a collective's last rank was late only for want of a CPU: over its lateness and as
// long again before it, its thread was runnable while other processes (not its own, not the
// tracer) held its CPU for at least half the lateness. Such an entry is cpu_contention (the
// one per-gap rule, docs/INFERENCE.md "Claims on one gap"; docs/DIAGNOSIS.md "Arbitration").
bool straggler_late_for_cpu(const CorrelatorState& s, const ThreadTimelines& tl, const CollectiveEntry& late,
                            int64_t lateness_ns);
// The chain of a rank late for want of a CPU (cause cpu_contention, victim the late rank): the
// other ranks' waits for it are claimed under it.
std::string late_rank_cpu_chain_id(int64_t session_id, uint32_t late_pid, int64_t comm);

}  // namespace causeway
