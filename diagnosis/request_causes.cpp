#include "diagnosis/request_causes.h"

#include <algorithm>

#include "diagnosis/causes/request_registry.h"

namespace causeway::requests {

struct CauseFinder::ModuleStates {
  RequestCauses::States of;
};

CauseFinder::CauseFinder(sqlite3* db, int64_t session_id, std::vector<RequestSpan> spans)
    : evidence_(db, session_id, std::move(spans)), states_(std::make_unique<ModuleStates>()) {}

CauseFinder::~CauseFinder() = default;

// One arbitration per gap (docs/INFERENCE.md "Claims on one gap"): the causes that claim the
// same slow part share its excess, never more. The more specific evidence takes its time
// first: the request's own connection (network), then work the engine did instead of this
// request (another request's long prefill pass, a late rank's collective), then the engine's
// own state (queue, KV cache), then the host states of its threads (runnable, D), which within
// a tier go by time, as diagnosis/'s per-call arbitration gives a call to the state with the
// most time. A host stall inside a pass the engine spent on other work does not lengthen the
// gap: the pass does. A claim left under kMinRequestClaimNs is dropped.
void arbitrate_claims(std::vector<CauseClaim>& claims, double excess_ns) {
  auto tier_of = [](const CauseClaim& c) { return c.tier.value_or(RequestCauses::tier(c.cause)); };
  // One cause claims a gap once: two claims of one cause (a late rank's CPU wait, and the
  // engine threads' waits that include it) are the same time seen twice. The claim at the
  // better tier stays, with the larger of their times; its culprit is on the gap's path.
  std::stable_sort(claims.begin(), claims.end(), [&](const CauseClaim& a, const CauseClaim& b) { return tier_of(a) < tier_of(b); });
  for (size_t i = 0; i < claims.size(); ++i)
    for (size_t j = claims.size(); j-- > i + 1;)
      if (claims[j].cause == claims[i].cause) {
        claims[i].lost_ns = std::max(claims[i].lost_ns, claims[j].lost_ns);
        claims.erase(claims.begin() + static_cast<std::ptrdiff_t>(j));
      }
  std::stable_sort(claims.begin(), claims.end(), [&](const CauseClaim& a, const CauseClaim& b) {
    const auto ta = tier_of(a), tb = tier_of(b);
    return ta != tb ? ta < tb : a.lost_ns > b.lost_ns;
  });
  double left = std::max(0.0, excess_ns);
  for (CauseClaim& c : claims) {
    c.lost_ns = std::min(c.lost_ns, left);
    left -= c.lost_ns;
  }
  std::erase_if(claims, [](const CauseClaim& c) { return c.lost_ns < kMinRequestClaimNs; });
  std::stable_sort(claims.begin(), claims.end(), [](const CauseClaim& a, const CauseClaim& b) { return a.lost_ns > b.lost_ns; });
}

// Every module's claims, in the registry's order; those under the noise floor dropped, the
// rest arbitrated.
std::vector<CauseClaim> CauseFinder::explain(const std::string& id, uint32_t server_pid, int64_t from, int64_t to,
                                             double excess_ns) {
  std::vector<CauseClaim> out;
  if (to <= from || excess_ns <= 0) return out;
  RequestCauses::find_all(states_->of, evidence_, SlowPart{id, server_pid, from, to}, out);
  std::erase_if(out, [](const CauseClaim& c) { return c.lost_ns < kMinRequestClaimNs; });
  arbitrate_claims(out, excess_ns);
  return out;
}

}  // namespace causeway::requests
