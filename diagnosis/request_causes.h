// Why a request (or one of its token gaps) was slow: what the engine's threads and the other
// requests were doing during its slow part (docs/INFERENCE.md "Causes keyed to requests").
// The finder asks every request cause module in the registry (diagnosis/causes/request_registry.h)
// over the session's evidence (diagnosis/request_evidence.h), then arbitrates their claims.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "diagnosis/causes/request_cause.h"
#include "diagnosis/request_evidence.h"

namespace causeway::requests {

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
  struct ModuleStates;  // every module's State (the registry's tuple), kept across slow parts
  RequestEvidence evidence_;
  std::unique_ptr<ModuleStates> states_;
};

}  // namespace causeway::requests
