// State shared by the correlator's two halves: correlator.cpp (reading chunks, attributing
// each slow call) and chain_builder.cpp (turning accumulated evidence into chain documents),
// and read by every cause module. It includes neither the correlator nor the registry of
// causes (both sit above the cause modules, docs/DIAGNOSIS.md "Layers"): a chain's evidence is
// held type-erased here and typed by the module that owns it (chain_for, render_call_chain).
#pragma once

#include <sqlite3.h>

#include <any>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/baseline.h"
#include "analysis/cause.h"
#include "analysis/correlator_options.h"
#include "analysis/rank_inference.h"
#include "analysis/thread_timeline.h"
#include "common/result.h"
#include "tracedb/histogram.h"
#include "tracedb/op_catalog.h"
#include "tracedb/records.h"

namespace causeway {

// One row of `events` as the correlator needs it.
struct Ev {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  uint16_t op = 0;
  int32_t cpu = -1;
  int64_t a[6] = {0, 0, 0, 0, 0, 0};
  uint64_t stack = 0;
  int64_t end() const { return ts + dur; }
};

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
};

struct TransferAcc {
  uint32_t pid = 0, tid = 0;
  uint16_t op = 0;
  int64_t copies = 0, copy_ns = 0, bytes = 0;
  std::map<int64_t, int64_t> kinds;  // copy kind -> calls
  std::map<uint64_t, int64_t> stacks;
};

// Where a thread's time went between its first traced call and the end of its last one:
// inside calls (launches, GPU waits, the rest) and between them (on-CPU, off-CPU). The
// session causes host_bound and launch_bound read it (docs/DIAGNOSIS.md).
struct ThreadActivity {
  uint32_t pid = 0;
  int64_t first_ns = INT64_MAX, last_end_ns = INT64_MIN;
  int64_t calls = 0;                         // outermost traced calls
  int64_t submits = 0;                       // of them, calls that put work on a GPU queue
  int64_t launches = 0, launch_cpu_ns = 0;   // kernel launches and their time on-CPU
  int64_t gpu_waits = 0, gpu_wait_ns = 0;    // syncs and synchronous copies: time not runnable/D inside
  int64_t gap_ns = 0, gap_cpu_ns = 0;        // between calls: all of it, and the part on-CPU
  int64_t long_gaps = 0;                     // gaps >= 1 ms mostly on-CPU
  int64_t longest_gap_cpu_ns = 0;
  std::map<uint64_t, int64_t> gap_stacks;    // stack of the call after a long on-CPU gap -> on-CPU ns before it
  std::map<uint16_t, int64_t> gap_ops;       // op of the call after a long on-CPU gap -> on-CPU ns before it
  int64_t span() const { return last_end_ns > first_ns ? last_end_ns - first_ns : 0; }
};


struct AllocCall {
  int64_t ts = 0, dur = 0;
  uint16_t op = 0;
  uint32_t tid = 0;
  uint64_t stack = 0;
  bool claimed = false;  // recorded in call_causes (once it fell inside a storm)
};

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

// Per process: CUDA graph capture, instantiation and replay (graph_recapture). "Steady" is
// after the process's first graph launch: captures before it are the warm-up.
struct GraphAcc {
  uint32_t tid = 0;              // the thread that instantiated last
  uint16_t instantiate_op = 0;   // the instantiation op it used
  int64_t first_launch_ns = INT64_MAX;
  int64_t launches = 0;
  int64_t warmup_instantiations = 0;
  int64_t steady_captures = 0, steady_capture_ns = 0;  // begin capture -> end capture
  int64_t steady_instantiations = 0, steady_instantiate_ns = 0;
  int64_t first_steady_ns = INT64_MAX, last_ns = INT64_MIN;
  std::map<int64_t, int64_t> open_captures;  // stream -> when its capture began
  std::set<int64_t> streams;                 // streams captured on
  // Launches of each exec built in the steady state; at most kMaxTracked execs are followed
  // (a process re-instantiating every step for hours must not grow this without bound).
  static constexpr size_t kMaxTracked = 65536;
  std::unordered_map<int64_t, int64_t> steady_exec_launches;
  // Execs built in the steady state among those followed. Not the map's size: an exec
  // destroyed and built again often gets the same handle back (PyTorch re-capturing every step
  // on an H100: 1,278 execs on 381 handles), and each build is one exec to replay.
  int64_t steady_execs_built = 0;
  std::map<uint64_t, int64_t> instantiate_stacks;
};

struct CommAcc {
  int64_t collectives = 0;
  std::map<uint32_t, int64_t> entries_by_pid;
};

struct GpuShareAcc {  // per victim pid: how often other GPU processes submitted work during its syncs
  int64_t slow = 0, normal = 0;
  std::map<uint32_t, int64_t> slow_hits, normal_hits;  // other pid -> syncs overlapped
  std::map<uint32_t, int64_t> slow_launches;           // other pid -> launches inside slow syncs
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

  double events_per_ns = 0;  // highest event rate loaded so far (sizes chunks to a memory budget)
  std::unordered_map<uint64_t, std::vector<int64_t>> prev_durs;  // (pid, op) -> previous chunk's durations
  std::unordered_map<uint64_t, OpAcc> ops;
  std::unordered_map<uint32_t, int64_t> first_call;  // pid -> first call start
  std::unordered_map<uint32_t, int64_t> last_end;    // tid -> end of its previous call
  std::unordered_map<uint32_t, int64_t> last_gpu_wait_end;  // pid -> end of its latest sync or synchronous copy
  std::unordered_map<uint32_t, ThreadActivity> activity;  // tid -> where its time went
  std::unordered_set<uint64_t> seen_kinds;           // (pid, op[, kernel]) seen during start-up

  std::map<std::string, ChainAcc> chains;
  std::map<uint64_t, TransferAcc> transfers;             // (tid, op)
  std::unordered_map<uint32_t, std::vector<AllocCall>> allocs;  // pid -> expensive alloc/free calls
  std::map<std::pair<int64_t, uint32_t>, StragglerAcc> stragglers;  // (comm, pid)
  std::map<int64_t, CommAcc> comms;
  std::map<uint32_t, GpuShareAcc> gpu_share;
  std::map<uint32_t, GraphAcc> graphs;  // pid -> its CUDA graphs
  std::map<std::pair<int64_t, int64_t>, int64_t> seen_groups;  // (comm, seq) counted -> first entry ns
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

// Chain documents from the accumulated state (chain_builder.cpp).
Result<std::vector<ChainRecord>> build_chains(CorrelatorState& s, sqlite3* db);

inline uint64_t op_key(uint32_t pid, uint16_t op) { return (uint64_t{pid} << 16) | op; }

}  // namespace causeway
