#include "diagnosis/causes/request_kv_cache.h"

#include <algorithm>
#include <cmath>

#include "diagnosis/causes/request_cause_util.h"
#include "diagnosis/request_evidence.h"

namespace causeway::requests {

std::optional<CauseClaim> kv_cache_claim(const EngineSeries& s, uint32_t engine_pid, int64_t from, int64_t to) {
  if (to <= from) return std::nullopt;
  std::vector<std::pair<int64_t, int64_t>> pressed;
  double preempted = 0, usage_max = 0;
  const EnginePoint* prev = nullptr;  // the last point with a preemption count
  for (const EnginePoint& p : s.points) {
    if (p.preemptions) {
      // The counter rose between two scrapes: a preemption somewhere in that interval.
      if (prev && *p.preemptions > *prev->preemptions && p.ts_ns >= from && prev->ts_ns <= to) {
        preempted += *p.preemptions - *prev->preemptions;
        pressed.emplace_back(prev->ts_ns, p.ts_ns);
        // A stall that began within a scrape interval of the preemption is the preempted
        // request's: it streams nothing until it is admitted again, all of it.
        if (prev->ts_ns <= from + s.spacing_ns && p.ts_ns >= from - s.spacing_ns) pressed.emplace_back(from, to);
      }
      prev = &p;
    }
  }
  if (preempted <= 0) return std::nullopt;
  s.each_near(from, to, [&](const EnginePoint& p) {
    if (!p.kv_cache_usage) return;
    usage_max = std::max(usage_max, *p.kv_cache_usage);
    if (*p.kv_cache_usage >= kKvFull) pressed.emplace_back(p.ts_ns - s.spacing_ns / 2, p.ts_ns + s.spacing_ns / 2);
  });
  const double lost = covered_ns(std::move(pressed), from, to);
  if (lost <= 0) return std::nullopt;
  Culprit culprit{.pid = engine_pid, .share_kind = ShareKind::none};
  culprit.kv_cache_usage = std::round(usage_max * 1000) / 1000;
  culprit.preemptions = preempted;
  return CauseClaim{RequestCause::kv_cache_pressure, lost, std::move(culprit)};
}

void KvCacheRequestCause::find(RequestEvidence& ev, const SlowPart& part, std::vector<CauseClaim>& out) {
  const EngineSeries* s = ev.series(part.server_pid);
  if (!s) return;
  if (auto c = kv_cache_claim(*s, part.server_pid, part.from_ns, part.to_ns)) out.push_back(std::move(*c));
}

RequestChainWords KvCacheRequestCause::chain_words(const Culprit& culprit) {
  return {"; KV cache " + one_decimal(culprit.kv_cache_usage.value_or(0.0) * 100) + "% full, " +
              one_decimal(culprit.preemptions.value_or(0.0)) + " preemptions",
          {}};
}

const char* KvCacheRequestCause::recommendation([[maybe_unused]] const Culprit& culprit) {
  return "Give the KV cache more room: raise --gpu-memory-utilization, lower --max-num-seqs or --max-model-len, "
         "or quantize the KV cache (--kv-cache-dtype fp8).";
}

}  // namespace causeway::requests
