// What every source (live BPF, synthetic demo, import) hands to the store writer. Plain
// structs, Unix-ns timestamps; op ids are those of bpf/events.h and the `ops` table.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace causeway {

// One traced call (or point event, dur_ns = 0). ts_ns is the call's start.
struct CallRecord {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint16_t op = 0;
  int32_t cpu = -1;
  int64_t ret = 0;
  std::array<int64_t, 6> a{};  // meaning per op: ops.arg_names
  uint64_t stack_hash = 0;     // 0 = no stack
  uint64_t cgroup_id = 0;
};

struct SwitchRecord {
  int64_t ts_ns = 0;
  int32_t cpu = 0;
  uint32_t prev_tid = 0;
  uint32_t prev_pid = 0;
  int32_t prev_prio = 120;
  int64_t prev_state = 0;  // 0 runnable (preempted), 1 S, 2 D
  uint32_t next_tid = 0;
  uint32_t next_pid = 0;
  int32_t next_prio = 120;
};

struct WakeupRecord {
  int64_t ts_ns = 0;
  uint32_t tid = 0;
  uint32_t pid = 0;
  uint32_t waker_tid = 0;
  uint32_t waker_pid = 0;
  int32_t target_cpu = -1;
};

// A distributed job's rank as its launcher set it in the process's environment.
struct LauncherRank {
  int32_t rank = -1;
  int32_t world_size = 0;
  std::optional<int32_t> local_rank;
  std::string source;  // the variable it came from: RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
  std::string job_id;  // launcher's job identity, "" when none was set
};

struct ProcessRecord {
  uint32_t pid = 0;
  std::optional<uint32_t> ppid;
  std::string comm;
  std::string cmdline;
  std::string exe;
  uint64_t cgroup_id = 0;
  std::string container_id;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  std::optional<int64_t> exit_code;
  std::string cgroup_path;
  std::optional<LauncherRank> launcher_rank;
};

struct ThreadRecord {
  uint32_t tid = 0;
  uint32_t pid = 0;
  std::string comm;
  uint64_t cgroup_id = 0;  // cgroup v2 id; 0 = not known (keeps the one stored)
};

// What a cgroup v2 id seen in a session is on the host: its folder below the cgroup2 mount
// ("" when it was gone before it could be looked up) and the container/pod it names.
struct CgroupRecord {
  uint64_t id = 0;
  std::string path;
  std::string container_id;  // "" = none
  std::string pod;           // Kubernetes pod uid, "" = none
};

struct StackRecord {
  uint64_t hash = 0;
  std::vector<std::string> frames;  // innermost first
};

// A diagnosed chain; doc is the full JSON document of docs/INTERFACES.md's chain shape.
struct ChainRecord {
  std::string id;
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  std::string severity;
  std::string cause;
  std::optional<uint32_t> pid;
  std::string comm;
  std::string op;
  int64_t calls = 0;
  double p50_us = 0;
  double p99_us = 0;
  double slow_share = 0;
  std::optional<uint32_t> culprit_pid;
  std::string culprit_comm;
  std::optional<double> culprit_share;
  std::string summary;
  std::string doc;
};

// Which cause took how much of one slow call (or of the host stall in the gap before it):
// a row of call_causes (docs/DIAGNOSIS.md "Tail breakdown").
struct CallCauseRecord {
  uint16_t op = 0;
  uint32_t pid = 0, tid = 0;
  int64_t ts_ns = 0, dur_ns = 0, lost_ns = 0;
  bool gap = false;
  std::string cause;
  std::string chain_id;
};
// The claims of one diagnosis pass, written together (rows replace rows with the same key).
struct CallCausesRecord {
  std::vector<CallCauseRecord> rows;
};

// The session's request-level chains as of one pass over its requests (docs/INFERENCE.md
// "Request chains"): they replace every request-level chain stored before, in the same
// transaction, so a cause that left the tail leaves no stale chain.
struct RequestChainsRecord {
  std::vector<ChainRecord> chains;
};

// One HTTP request served by a traced process: a row of `requests` (schemas/trace.sql,
// migration 7; docs/INFERENCE.md). Times are Unix ns; 0 = not seen.
struct RequestRecord {
  std::string request_id;
  bool id_generated = false;
  uint32_t server_pid = 0;
  int32_t fd = -1;
  std::string method, path, tenant, peer;
  int64_t start_ns = 0, end_ns = 0, first_byte_ns = 0, first_token_ns = 0, last_byte_ns = 0;
  std::optional<int64_t> ttft_ns, e2e_ns, itl_max_ns;
  std::string itl_us;  // JSON array of token gaps in µs ("" = none)
  int status = 0;
  uint64_t prompt_bytes = 0, response_bytes = 0;
  bool streamed = false, complete = false;
  uint32_t events = 0;
  // Migration 8 (docs/INFERENCE.md "Model and tokens", "Errors").
  bool tls = false;
  std::string model;                                     // "" = not named
  std::optional<int64_t> max_tokens, input_tokens, output_tokens, tpot_ns;
  uint32_t content_events = 0;                           // SSE events carrying generated text
  std::string end_reason = "complete";                   // complete | aborted | disconnected | lost | trace_end
  // Migration 9 (docs/INFERENCE.md "Arrival time"): start_ns/end_ns are the kernel's arrival
  // of the request's first/last byte; the server's read that completed it, and the wait.
  int64_t read_end_ns = 0;
  std::optional<int64_t> api_wait_ns;  // end_ns → read_end_ns
};

// Samples of one scrape of an inference engine's /metrics: rows of engine_metrics.
// The first record of a pid also names its engine in `engines`.
struct EngineSampleRecord {
  int64_t ts_ns = 0;
  uint32_t pid = 0;
  std::string engine;
  std::string url;  // the endpoint scraped
  struct Sample {
    std::string name, labels;
    double value = 0;
  };
  std::vector<Sample> samples;
};

// The host-context watermark (docs/DIAGNOSIS.md "The watermark rule"): every scheduler,
// wake-up, block-I/O, page-fault and network record with a timestamp before host_context_ns
// is in this batch or an earlier one, or was lost and counted. Pushed through the queue after
// those records, so it is committed in the same transaction as the last of them; stored as
// the collector_stats row `host_context_ns`.
struct HostContextMark {
  int64_t host_context_ns = 0;
};
inline constexpr std::string_view kHostContextCounter = "host_context_ns";

// Rare, never dropped: identity and results rather than the event stream. Requests come at
// most thousands a second, far below the event lanes, and each one is a result to keep.
using MetaRecord = std::variant<ProcessRecord, ThreadRecord, StackRecord, ChainRecord, CgroupRecord, CallCausesRecord,
                                RequestChainsRecord, RequestRecord, EngineSampleRecord, HostContextMark>;

struct SessionInfo {
  std::string source_kind;  // live | demo | import
  std::string label;
  std::string host;
  std::string kernel;
  std::string gpus;
  std::string driver_version;
  std::string cuda_version;
  int64_t started_ns = 0;
  std::string system;                    // JSON document (collector/system_identity.h), "" = none
  std::string boot_id;
  std::optional<int64_t> clock_offset_ns;  // realtime - monotonic at start (live sessions)
};

}  // namespace causeway
