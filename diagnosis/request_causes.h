// Why a request (or one of its token gaps) was slow: what the engine's threads and the other
// requests were doing during its slow part (docs/INFERENCE.md "Causes keyed to requests").
// Read from the session's sched/wakeups rows and the requests table at question time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/causes/request_cause.h"
#include "diagnosis/engine_series.h"
#include "diagnosis/forward_passes.h"

namespace causeway::requests {

// What the finder needs of every request in the window (prefill of the others).
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
};


class NcclStragglers;

// One arbitration per gap (docs/INFERENCE.md "Claims on one gap"): claims on one slow part
// share its excess by tier, then time; none below the noise floor is kept. Largest first.
void arbitrate_claims(std::vector<CauseClaim>& claims, double excess_ns);

class CauseFinder {
 public:
  CauseFinder(sqlite3* db, int64_t session_id, std::vector<RequestSpan> spans);
  ~CauseFinder();
  // The slow part [from, to] of request `id` served by `server_pid`; excess_ns: how much
  // longer than typical it was (claims are capped at it). Largest claim first.
  std::vector<CauseClaim> explain(const std::string& id, uint32_t server_pid, int64_t from_ns, int64_t to_ns,
                                  double excess_ns);

 private:
  const std::vector<uint32_t>& engine_pids(uint32_t server_pid);
  void cpu_contention(uint32_t server_pid, int64_t from, int64_t to, std::vector<CauseClaim>& out);
  void cpu_holders(int32_t cpu, int64_t from, int64_t to, int64_t until, std::map<uint32_t, double>& by_pid);
  void prefill(const std::string& id, uint32_t server_pid, int64_t from, int64_t to, std::vector<CauseClaim>& out);
  // The engine's forward passes over the server's serving time, read at the first need.
  struct EnginePasses {
    PassScan scan;
    int64_t median_ns = 0;
    int64_t longest_ns = 0;
  };
  const EnginePasses& passes(uint32_t server_pid);
  // network: the request's own connection waited on the socket.
  std::optional<CauseClaim> network(const std::string& id, uint32_t server_pid, int64_t from, int64_t to);
  // queueing and kv_cache_pressure, from the engine's scraped metrics.
  void engine_state(const std::string& id, uint32_t server_pid, int64_t from, int64_t to, std::vector<CauseClaim>& out);

  sqlite3* db_;
  int64_t session_id_;
  std::vector<RequestSpan> spans_;
  uint64_t long_prompt_bytes_ = 0;  // a prompt this long is a long prefill
  std::map<uint32_t, std::vector<uint32_t>> engines_;
  std::map<uint32_t, std::string> comms_;
  std::optional<uint32_t> tracer_pid_;  // never a culprit (diagnosis/tracer_pid.h)
  std::optional<std::map<uint32_t, EngineSeries>> series_;  // loaded at the first question
  std::map<uint32_t, EnginePasses> passes_;
  std::unique_ptr<NcclStragglers> nccl_;
};

}  // namespace causeway::requests
