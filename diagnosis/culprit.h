// The party a chain blames, typed from the cause module that names it through annotation
// (hosts, ranks, tenants: diagnosis/chain_hosts.cpp) until the one chain serializer
// (diagnosis/chain_json.cpp) writes it as the chain's `culprit` object (docs/INTERFACES.md,
// docs/DIAGNOSIS.md "Causes"). Each field below has exactly one JSON key, named in its comment;
// an empty optional writes no key. Only the share's key depends on the cause: ShareKind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace causeway {

// What the culprit's share is a share of; each kind is written under its own key.
enum class ShareKind : uint8_t {
  off_cpu,     // "off_cpu_share": of the victim's stolen CPU time (cpu_contention)
  wait,        // "wait_share": of the blocked time (lock_contention, dataloader_starvation)
  overlap,     // "overlap_share": of the slow calls it overlapped (io_contention, gpu_wait)
  page,        // "page_share": of the pages allocated (memory_pressure)
  late,        // "late_share": of the collectives entered last (nccl_straggler)
  slow_calls,  // "share": of the slow calls (network)
  claimed,     // "share": of the time its request cause claimed, among the parties (request level)
  none,        // no share: the culprit is the one party (most request causes)
};

constexpr std::string_view share_key(ShareKind k) {
  switch (k) {
    case ShareKind::off_cpu: return "off_cpu_share";
    case ShareKind::wait: return "wait_share";
    case ShareKind::overlap: return "overlap_share";
    case ShareKind::page: return "page_share";
    case ShareKind::late: return "late_share";
    case ShareKind::slow_calls: return "share";
    case ShareKind::claimed: return "share";
    case ShareKind::none: return "";
  }
  return "share";
}

// "preempted_by": who held a straggler's CPU {pid, comm, share of its late entries}.
struct Preempter {
  uint32_t pid = 0;
  std::string comm;
  double share = 0;
};

// One entry of "workers" (dataloader_starvation): {pid, comm, wait_share, doing}.
struct DataWorkerShare {
  uint32_t pid = 0;
  std::string comm;
  double wait_share = 0;
  std::string doing;  // block_io | cpu | runnable | waiting | unknown
};

// One entry of "waiting_hosts" (a merged session's nccl_straggler): {host, pids}.
struct WaitingHost {
  std::string host;
  std::vector<int64_t> pids;
};

// The culprit's tenant (diagnosis/tenants.h), sanitized: "cgroup", "container" (null when the
// cgroup names none), "pod" (absent when none).
struct CulpritTenant {
  std::string cgroup;
  std::optional<std::string> container;
  std::optional<std::string> pod;
};

// One entry of "long_requests" (prefill_interference): a request whose long prefill held the
// engine. The prompt's size is written once: "prompt_tokens" when the server said it (usage),
// else "prompt_bytes" (the body's size). Id and tenant are the client's: untrusted, sanitized
// where they are shown.
struct LongRequest {
  std::string id;                         // "id"
  std::optional<uint64_t> prompt_tokens;  // "prompt_tokens": usage.prompt_tokens (requests/llm_payload.h)
  uint64_t prompt_bytes = 0;              // "prompt_bytes": written only when the tokens are not known
  std::string tenant;                     // "tenant"
};

// How prefill_interference saw the long prefills ("basis").
enum class PrefillBasis : uint8_t {
  forward_pass,  // "forward_pass": a pass much longer than the median, during a long request's prefill
  prompt_bytes,  // "prompt_bytes": the passes could not be delimited; the long prompts' prefill time
};

constexpr std::string_view prefill_basis_name(PrefillBasis b) {
  return b == PrefillBasis::forward_pass ? "forward_pass" : "prompt_bytes";
}

// What the server's writes to a slow reader waited on (network, request level).
struct SendBufferWaits {
  int64_t eagain = 0;          // "eagain"
  int64_t short_writes = 0;    // "short_writes"
  int64_t blocked_writes = 0;  // "blocked_writes"
};

// The process a cpu_contention culprit held the CPU from, when it is not the request's own
// engine threads: a tensor-parallel rank late for want of a CPU ("victim", request level;
// docs/INFERENCE.md "Claims on one gap").
struct CulpritVictim {
  uint32_t pid = 0;  // "pid"
  std::string comm;  // "comm"
};

struct Culprit {
  std::optional<uint32_t> pid;      // "pid" (absent for a network peer)
  std::optional<uint32_t> tid;      // "tid": the lock holder's thread
  std::optional<std::string> comm;  // "comm"
  std::optional<std::string> peer;  // "peer": a remote addr:port (network)
  ShareKind share_kind = ShareKind::slow_calls;
  double share = 0;  // written under share_key(share_kind); the chains table's culprit_share

  std::optional<int32_t> cpu;          // "cpu": the CPU it ran on (cpu_contention)
  std::optional<bool> own_io;          // "own_io": the victim's own I/O (io_contention)
  std::optional<bool> oom_killed;      // "oom_killed" (memory_pressure)
  std::optional<int64_t> retransmits;  // "retransmits" (network)
  std::optional<int64_t> rank;         // "rank" (nccl_straggler)
  std::optional<std::string> own_cause;       // "own_cause": cpu_contention | io_wait | sleeping | on_cpu
  std::optional<Preempter> preempted_by;      // "preempted_by"
  std::optional<std::string> doing;           // "doing": what the data worker did (see DataWorkerShare)
  std::optional<double> doing_share;          // "doing_share"
  std::optional<std::vector<DataWorkerShare>> workers;  // "workers"
  std::optional<int64_t> io_bytes;            // "io_bytes": bytes the data worker read

  // Filled by annotation (diagnosis/chain_hosts.cpp), for a culprit with a pid.
  std::optional<std::string> host;                       // "host"
  std::optional<int64_t> host_pid;                       // "host_pid": its pid on its own host (merged sessions)
  std::optional<std::string> rank_source;                // "rank_source": init or the environment variable
  std::optional<std::vector<WaitingHost>> waiting_hosts;  // "waiting_hosts" (merged sessions)
  std::optional<CulpritTenant> tenant;                   // "cgroup", "container", "pod"

  // Request causes (docs/INTERFACES.md "Inference requests"), each set by its module.
  std::optional<int64_t> nranks;              // "nranks" (nccl_straggler)
  std::optional<double> tracer_overhead_ms;   // "tracer_overhead_ms": the tracer's own share, never the culprit (cpu_contention)
  std::optional<double> on_cpu_ms;            // "on_cpu_ms": the API thread's time on CPU (api_server_busy)
  std::optional<double> api_wait_ms;          // "api_wait_ms": received → read (api_server_busy)
  std::optional<SendBufferWaits> send_waits;  // "eagain", "short_writes", "blocked_writes" (network)
  std::optional<double> kv_cache_usage;       // "kv_cache_usage": the highest, 0–1 (kv_cache_pressure)
  std::optional<double> preemptions;          // "preemptions": the engine's counter's rise (kv_cache_pressure)
  std::optional<double> waiting_max;          // "waiting_max": the engine's queue at its longest (queueing)
  std::optional<int64_t> pages;               // "pages": pages it allocated during the waits (memory_pressure)
  std::optional<CulpritVictim> victim;        // "victim": {"pid", "comm"} the late rank (cpu_contention)
  // prefill_interference: "requests" (their ids) and "long_requests", the culprit shown first.
  std::optional<std::vector<LongRequest>> long_requests;
  std::optional<PrefillBasis> basis;   // "basis"
  std::optional<double> pass_ms;       // "pass_ms": the longest such pass (basis forward_pass)
  std::optional<double> median_pass_ms;  // "median_pass_ms"
};

}  // namespace causeway
