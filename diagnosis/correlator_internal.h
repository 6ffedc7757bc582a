// The correlator's own state, shared by its two halves: correlator.cpp (reading chunks, walking
// and judging each call) and chain_builder.cpp (turning evidence into chain documents), and
// read by every cause module: names, options, per-op statistics, per-thread activity and the
// per-call chains. A cause module's own accumulator is not here: it is the module's State,
// held by the registry (causes/registry.h, CauseStates). This file includes neither the
// correlator nor the registry (both sit above the cause modules, docs/DIAGNOSIS.md "Layers"): a
// chain's evidence is held type-erased here and typed by the module that owns it (chain_for,
// render_call_chain).
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <any>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "diagnosis/baseline.h"
#include "diagnosis/chunk_sizing.h"
#include "diagnosis/cause.h"
#include "diagnosis/correlator_options.h"
#include "diagnosis/event_row.h"
#include "diagnosis/rank_inference.h"
#include "diagnosis/rollup_baselines.h"
#include "diagnosis/thread_activity.h"
#include "diagnosis/thread_timeline.h"
#include "common/result.h"
#include "tracedb/histogram.h"
#include "tracedb/op_catalog.h"
#include "tracedb/records.h"

namespace causeway {

struct ProcInfo {
  std::string comm;
  int64_t ppid = -1;
};

struct TimelineItem {
  int64_t ts_ns = 0;
  std::string layer;  // cuda | driver | nccl | host | io | net | mem
  std::string what;
};

// A named party: a process (tid 0) or a thread.
struct PartyAcc {
  uint32_t pid = 0, tid = 0;
  int64_t ns = 0;      // time attributed (stolen CPU, overlapping I/O, pages, …)
  int64_t hits = 0;    // slow calls it appeared in
  int64_t amount = 0;  // bytes, pages
};

struct ChainAcc {
  std::string id;
  Cause cause = Cause::unknown;
  std::string_view cause_name;  // the module's JSON name (static storage)
  bool between_calls = false;  // host stalls between calls rather than inside them
  uint32_t pid = 0, tid = 0;   // victim (tid: the thread seen most)
  uint16_t op = 0;
  int64_t calls = 0, lost_ns = 0, off_ns = 0;  // off_ns: the cause's own time (off-CPU in the state that matters)
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
  std::vector<int64_t> slow_durs;
  std::map<uint64_t, PartyAcc> culprits;  // key: pid << 32 | tid (tid 0: whole process)
  std::map<uint64_t, int64_t> stacks;     // stack id -> slow calls
  std::map<int32_t, int64_t> cpus;        // cpu -> ns (stolen there)
  std::map<uint32_t, int64_t> tids;       // victim thread -> slow calls (the chain reports the main one)
  std::any evidence;                      // the cause module's Evidence (chain_for, render_call_chain)
  struct Sample {
    int64_t excess = 0;
    std::vector<TimelineItem> items;
  };
  std::vector<Sample> worst;  // the few slowest calls, for the timeline
};

struct OpAcc {
  uint64_t count = 0, slow = 0;
  uint64_t min = UINT64_MAX, max = 0;
  LatencyHistogram hist;
  void add(int64_t dur) {
    ++count;
    hist.add(static_cast<uint64_t>(std::max<int64_t>(0, dur)));
    min = std::min<uint64_t>(min, dur);
    max = std::max<uint64_t>(max, dur);
  }
};

struct CorrelatorState {
  int64_t session_id = 0;
  CorrelatorOptions opt;
  CorrelatorCounters counters;
  int64_t analyzed_from = INT64_MAX, analyzed_to = INT64_MIN;

  std::vector<Ev> evbuf;
  std::vector<SchedRow> schedbuf;
  std::vector<WakeRow> wakebuf;
  int64_t loaded_to = INT64_MIN;  // buffers hold rows with ts < loaded_to
  int64_t sched_loaded_to = INT64_MIN;  // schedbuf / wakebuf: rows with ts < this (ahead of loaded_to)
  int64_t window_start = INT64_MIN;  // rows before this are never needed
  // Host context (sched, wakeups, block I/O, faults, network) is complete before this: the
  // collector's watermark during a live trace, unbounded for a finished session. Context is
  // never loaded past it, and a call that ends after it is not judged gpu_wait
  // (docs/DIAGNOSIS.md "The watermark rule").
  int64_t context_to = INT64_MAX;
  int64_t next_id = 0;               // events cursor (rowid)
  int64_t max_ts_read = INT64_MIN;
  std::vector<Ev> pending;           // events read ahead of the buffer (ts >= loaded_to)
  std::unordered_set<int64_t> taken_ahead;  // ids past the cursor already read (take_late_rows)
  int64_t data_end = INT64_MIN;

  std::unordered_map<uint32_t, ProcInfo> procs;
  std::unordered_map<uint32_t, std::pair<uint32_t, std::string>> threads;  // tid -> (pid, comm)

  // Chunk sizing (diagnosis/chunk_sizing.h): the rollups' peak calls per ns, the highest host
  // row rate loaded, and (for a session without rollups) the highest row rate loaded.
  double calls_per_ns = 0;
  double host_rows_per_ns = 0;
  double events_per_ns = 0;
  RollupPeak rollup_peak;  // the calls-per-second peak, read incrementally
  std::unordered_map<uint64_t, std::vector<int64_t>> prev_durs;  // (pid, op) -> previous chunk's durations
  // Fast-counted ops (launches): their baselines and their OpAcc come from the rollups'
  // histograms (diagnosis/rollup_baselines.h), the same whether their calls were rows or
  // counted in the kernel. rollup_ops: the keys whose OpAcc the rollups fill (rows add nothing).
  RollupSeconds rollup_secs;
  std::unordered_set<uint64_t> rollup_ops;
  int64_t prev_chunk_from = INT64_MIN;  // the baseline spans the previous chunk and this one
  std::unordered_map<uint64_t, OpAcc> ops;
  std::unordered_map<uint32_t, int64_t> first_call;  // pid -> first call start
  std::unordered_map<uint32_t, int64_t> last_end;    // tid -> end of its previous call
  std::unordered_map<uint32_t, int64_t> last_gpu_wait_end;  // pid -> end of its latest sync or synchronous copy
  std::unordered_map<uint32_t, ThreadActivity> activity;  // tid -> where its time went
  std::unordered_set<uint64_t> seen_kinds;           // (pid, op[, kernel]) seen during start-up

  std::map<std::string, ChainAcc> chains;
  // The tracer's own pid (diagnosis/tracer_pid.h): never a cpu_contention culprit.
  std::optional<uint32_t> tracer_pid;
  RankInference ranks;  // launcher ranks of processes whose ncclCommInitRank was not traced
  std::vector<CallCauseRecord> claims;  // slow calls claimed since the last Correlator::take_call_causes()
  bool sched_seen = false;        // the session has scheduler data: time between calls can be split on/off CPU

  // Chains already published by a live trace: rendered on every update even once they fall
  // under the impact floor, so the stored row follows the evidence instead of freezing.
  std::unordered_set<std::string> published;

  std::string comm_of(uint32_t pid) const;
  std::string thread_name(uint32_t tid) const;
  bool is_kernel_thread(uint32_t pid) const;
};

struct CauseStates;  // every cause module's accumulator (diagnosis/causes/registry.h)

// Chain documents from the accumulated state (chain_builder.cpp).
Result<std::vector<ChainRecord>> build_chains(CorrelatorState& s, CauseStates& causes, sqlite3* db);

}  // namespace causeway
