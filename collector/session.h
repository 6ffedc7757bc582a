// One live trace: discover → attach → drain → decode → symbolize → store. Runs on the calling
// thread until the duration elapses or stop() says so, then drains the rings, flushes the
// writer and closes the session (SIGINT/SIGTERM: nothing accepted is lost).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collector/attacher.h"
#include "common/result.h"

namespace causeway::collector {

// A probe outside the libraries (selftest: a function in causeway itself), at a file offset
// of binary (the function's first byte), with the cookie of the op it stands in for.
struct ExtraProbe {
  std::string binary;
  uint64_t offset = 0;
  uint64_t cookie = 0;
};

struct TraceOptions {
  std::string db;
  std::string label;
  int64_t duration_ns = 0;            // 0 = until stopped
  std::vector<uint32_t> pids;         // empty = every process using the libraries
  std::vector<std::string> libs;      // --lib: attach these files up front
  bool detach_after_return = false;   // see LoaderOptions: only for a process that exits next
  bool stacks = true;
  bool record_all = false;            // --record-all: every call a row (docs/COLLECTOR.md "Aggregated calls")
  bool python_frames = true;          // with stacks: Python frames of CPython 3.10-3.13 callers
  int64_t max_db_bytes = 0;
  bool live_table = false;            // redraw the table on stderr each second
  bool verbose = true;                // attach messages on stderr
  uint32_t ring_calls_bytes = 4u << 20;
  uint32_t ring_host_bytes = 2u << 20;
  size_t writer_queue = 0;            // 0 = the writer's default
  // Every process's maps and listeners re-read from /proc: each second when the kernel cannot
  // tell mappings (no perf events), else this often, as a safety net (docs/COLLECTOR.md
  // "Discovery and lifecycle").
  int64_t rescan_interval_ns = 1'000'000'000;
  int64_t event_rescan_interval_ns = 30'000'000'000;
  std::string ready_file;             // created once the initial attach is done
  std::vector<ExtraProbe> extra_probes;
  std::function<void()> on_ready;
  bool diagnose = true;               // run the correlator live and at the end
  std::string metrics_addr;           // --metrics HOST:PORT: Prometheus exposition
  // HTTP requests of serving processes (docs/INFERENCE.md): listeners in the traced tree,
  // and any process listening on one of these ports.
  bool requests = true;
  std::vector<uint16_t> http_ports;
  std::string tenant_header = "x-tenant";
  // Each server's Prometheus /metrics is sampled this often (0: not at all).
  int64_t engine_metrics_interval_ns = 1'000'000'000;
  // The trace ends by itself once the writer has stored nothing for this long (a full disk
  // nobody frees); a deleted or replaced DB ends it at once. docs/COLLECTOR.md "Faults".
  int64_t stall_exit_ns = 30'000'000'000;
};

// What the writer could not store, for the summary and the exit status. Not a stored record:
// the writer's WriterCounters and WriterHealth (tracedb/store_writer.h) once it is closed, with
// op ids turned into op names for the person reading the summary.
struct WriteLoss {
  bool failed = false;                          // a write failed or the DB went away
  std::string fault;                            // write_fault_name() of the last failure
  std::string error;                            // its message
  uint64_t events = 0;                          // rows lost in failed writes (dropped_write_error)
  std::map<std::string, uint64_t> by_op;        // every row the writer lost, by op name
  std::string stopped_by_itself;                // why the trace ended without being asked; "" when asked
  std::string record_error;                     // the loss counts themselves could not be stored: why
};

// What `trace` prints when it ends. Not a stored record either: the session row is
// tracedb/records.h SessionInfo; `counters` are the collector_stats rows the session stored
// (collector/session_write.cpp update_counters), where calls, switches, wakeups and
// host_events are stored as calls_received, switches_received, wakeups_received and
// host_events_received.
struct TraceSummary {
  int64_t session_id = 0;
  int64_t elapsed_ns = 0;
  uint64_t calls = 0;
  uint64_t switches = 0;
  uint64_t wakeups = 0;
  uint64_t host_events = 0;
  uint64_t dropped_ring = 0;
  uint64_t dropped_writer = 0;
  std::map<std::string, uint64_t> counters;  // everything stored in collector_stats
  std::vector<AttachedLib> libs;
  std::vector<std::string> warnings;
  size_t processes = 0;
  size_t chains = 0;
  uint64_t requests = 0;
  std::string metrics_url;
  WriteLoss loss;
};

Result<TraceSummary> run_trace(const TraceOptions& options, const std::function<bool()>& stop);

// collector_stats names of the BPF drop counters, indexed by enum cw_drop.
const char* drop_counter_name(uint32_t reason);

}  // namespace causeway::collector
