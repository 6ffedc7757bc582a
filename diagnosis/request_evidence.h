// What every request-level cause module reads (docs/INFERENCE.md "Causes keyed to requests"):
// all the requests the session recorded (evidence is never filtered by the question's tenant,
// path or window), the engine's processes under each server, process names, the tracer's pid
// and the engine's scraped metrics, each read once at its first need. The modules
// (diagnosis/causes/request_*.h) take it through their find(); the finder
// (diagnosis/request_causes.h) owns it. It includes no module: modules include it.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/engine_series.h"

namespace causeway::requests {

// What the modules need of every request in the session (the others' prefills, a connection).
struct RequestSpan {
  std::string id;
  uint32_t server_pid = 0;
  int64_t end_ns = 0;        // request read
  int64_t first_out_ns = 0;  // first token (streamed) or first byte; 0 none
  uint64_t prompt_bytes = 0;
  int64_t start_ns = 0, last_ns = 0;  // first read, last byte written
  int32_t fd = -1;   // the request's connection (network)
  std::string peer;  // the client's address:port ("" when unknown)
  std::string tenant;
  int64_t read_end_ns = 0;  // the server's read that took the request (end_ns: its arrival)
  std::optional<uint64_t> prompt_tokens;  // the server's usage.prompt_tokens (requests.input_tokens), when it said
};

// One slow part of one request (a TTFT, a token gap): what each module is asked to explain.
struct SlowPart {
  const std::string& id;  // the request's
  uint32_t server_pid = 0;
  int64_t from_ns = 0, to_ns = 0;
};

// How far back a runnable wait, or a pass that overlaps a slow part, may start (a wake-up or a
// preemption before the window, a prefill that began before it).
inline constexpr int64_t kRequestLookbackNs = 500'000'000;
// A claim below this is noise on a busy host (scheduler ticks, a page fault): the finder drops it.
inline constexpr double kMinRequestClaimNs = 1e6;

class RequestEvidence {
 public:
  RequestEvidence(sqlite3* db, int64_t session_id, std::vector<RequestSpan> spans);

  sqlite3* db() const { return db_; }
  int64_t session_id() const { return session_id_; }
  const std::vector<RequestSpan>& spans() const { return spans_; }
  // A prompt this long is a long prefill: 4× the median prompt, at least 1 KiB.
  uint64_t long_prompt_bytes() const { return long_prompt_bytes_; }
  // Names of processes and of threads seen in context switches (a culprit need not be traced).
  const std::map<uint32_t, std::string>& comms() const { return comms_; }
  std::string comm(uint32_t pid) const;
  // Never a culprit (diagnosis/tracer_pid.h).
  const std::optional<uint32_t>& tracer_pid() const { return tracer_pid_; }
  // The server and all its recorded descendants, at any depth, the server first.
  const std::vector<uint32_t>& engine_pids(uint32_t server_pid);
  // The engine's scraped metrics of a server; null when none were scraped.
  const EngineSeries* series(uint32_t server_pid);

 private:
  sqlite3* db_;
  int64_t session_id_;
  std::vector<RequestSpan> spans_;
  uint64_t long_prompt_bytes_ = 0;
  std::map<uint32_t, std::string> comms_;
  std::optional<uint32_t> tracer_pid_;
  std::map<uint32_t, std::vector<uint32_t>> engines_;
  std::optional<std::map<uint32_t, EngineSeries>> series_;  // loaded at the first question
};

}  // namespace causeway::requests
