#include "diagnosis/causes/request_queueing.h"

#include <algorithm>

#include "diagnosis/causes/request_cause_util.h"
#include "diagnosis/request_evidence.h"

namespace causeway::requests {

std::optional<CauseClaim> queueing_claim(const EngineSeries& s, uint32_t engine_pid, int64_t from, int64_t to) {
  if (to <= from) return std::nullopt;
  std::vector<std::pair<int64_t, int64_t>> waited;
  double waiting_max = 0;
  s.each_near(from, to, [&](const EnginePoint& p) {
    if (!p.waiting || *p.waiting <= 0) return;
    waited.emplace_back(p.ts_ns - s.spacing_ns / 2, p.ts_ns + s.spacing_ns / 2);
    waiting_max = std::max(waiting_max, *p.waiting);
  });
  const double lost = covered_ns(std::move(waited), from, to);
  if (lost <= 0) return std::nullopt;
  Culprit culprit{.pid = engine_pid, .share_kind = ShareKind::none};
  culprit.waiting_max = waiting_max;
  return CauseClaim{RequestCause::queueing, lost, std::move(culprit)};
}

void QueueingRequestCause::find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
  const EngineSeries* s = ev.series(part.server_pid);
  if (!s) return;
  // Queued only before its first token: once it streams, the request is running.
  int64_t first_out = part.to_ns;
  for (const auto& r : ev.spans())
    if (r.id == part.id && r.server_pid == part.server_pid && r.first_out_ns) first_out = std::min(part.to_ns, r.first_out_ns);
  if (auto c = queueing_claim(*s, part.server_pid, part.from_ns, first_out)) out.push_back(std::move(*c));
}

RequestChainWords QueueingRequestCause::chain_words(const Culprit& culprit) {
  return {"; up to " + one_decimal(culprit.waiting_max.value_or(0.0)) + " requests waiting in the engine's queue", {}};
}

const char* QueueingRequestCause::recommendation([[maybe_unused]] const Culprit& culprit) {
  return "The engine is at capacity: add replicas, raise the batch limit if memory allows (vLLM --max-num-seqs), "
         "or shed load before the queue grows.";
}

}  // namespace causeway::requests
