// `api_server_busy` keyed to requests: the request had fully arrived, yet sat in the socket's
// receive queue because the API server's own thread was busy on CPU with other work (an
// asyncio/uvicorn event loop blocked by a CPU-bound handler, tokenization, JSON of a long
// response). The wait is measured per request from the kernel's arrival of its last byte to
// the server's read of it (docs/INFERENCE.md "Arrival time"); this cause claims the part of
// it the server's busiest thread spent ON CPU. When the thread was runnable but OFF CPU the
// time is cpu_contention's (diagnosis/causes/request_cpu_contention.h names the preemptor).
#pragma once

#include "diagnosis/causes/request_cause.h"

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace causeway::requests {

struct ApiServerBusyRequestCause {
  static constexpr RequestCause id = RequestCause::api_server_busy;
  static constexpr std::string_view name = "api_server_busy";
  // The server did other work instead of reading this request.
  static constexpr ClaimTier tier = ClaimTier::engine_work;
  static const char* recommendation(const Culprit& culprit);
  // The request's own API wait (its span's end_ns → read_end_ns) inside the slow part.
  static void find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out);
};

// A request's API wait: its last byte arrived at end_ns, the server's read took it at
// read_end_ns (requests.read_end_ns).
struct ApiWait {
  uint32_t server_pid = 0;
  int64_t end_ns = 0, read_end_ns = 0;
};

// [from, to]: the request's slow part. The claim: the on-CPU time, inside the wait and the
// slow part, of the server's thread that ran the most there. Culprit {"pid", "tid", "comm"
// (the thread's), "on_cpu_ms", "api_wait_ms"}. None when the wait is unknown or the server's
// threads were off CPU throughout.
std::optional<CauseClaim> api_server_busy_claim(sqlite3* db, int64_t session_id, const ApiWait& wait, int64_t from,
                                                int64_t to);

}  // namespace causeway::requests
