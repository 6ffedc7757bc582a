#include "diagnosis/causes/request_prefill.h"

#include <algorithm>

#include "diagnosis/causes/request_cause_util.h"
#include "diagnosis/request_evidence.h"

namespace causeway::requests {
namespace {

// A forward pass "much longer than the median pass" (docs/INFERENCE.md "Causes keyed to
// requests"): at least twice as long, and 5 ms more (a fast engine's jitter is not a prefill).
constexpr double kLongPassFactor = 2.0;
constexpr int64_t kLongPassMinExcessNs = 5'000'000;
// The culprit names at most this many long requests (the chain's words show 5 of them).
constexpr size_t kMaxLongRequestsNamed = 10;

// The engine's forward passes over its server's serving time (the slow parts lie in it).
const PrefillInterferenceRequestCause::EnginePasses& prefill_engine_passes(PrefillInterferenceRequestCause::State& st,
                                                                           RequestEvidence& ev, uint32_t server_pid) {
  auto it = st.by_server.find(server_pid);
  if (it != st.by_server.end()) return it->second;
  int64_t from = INT64_MAX, to = INT64_MIN;
  for (const auto& s : ev.spans())
    if (s.server_pid == server_pid) from = std::min(from, s.start_ns), to = std::max({to, s.last_ns, s.end_ns});
  PrefillInterferenceRequestCause::EnginePasses p;
  if (from <= to)
    if (auto scan = load_forward_passes(ev.db(), ev.session_id(), ev.engine_pids(server_pid), from - kRequestLookbackNs, to); scan)
      p.scan = std::move(*scan);
  p.median_ns = median_pass_ns(p.scan.passes);
  for (const ForwardPass& f : p.scan.passes) p.longest_ns = std::max(p.longest_ns, f.dur_ns());
  return st.by_server[server_pid] = std::move(p);
}

}  // namespace

// Other requests' long prefills during the slow part: the engine ran their forward pass
// instead of this request's next step. With the engine's passes delimited, the evidence is a
// pass much longer than the median (kLongPassFactor ×, kLongPassMinExcessNs more) during a
// long request's prefill, and the time lost is that pass's excess over the median pass; else
// (no sync closes the engine's launches) the long requests' prefill time itself.
void PrefillInterferenceRequestCause::find(State& state, RequestEvidence& ev, const SlowPart& part,
                                           std::vector<CauseClaim>& out) {
  const int64_t from = part.from_ns, to = part.to_ns;
  std::vector<const RequestSpan*> longs;
  for (const auto& s : ev.spans())
    if (s.id != part.id && s.server_pid == part.server_pid && s.prompt_bytes >= ev.long_prompt_bytes() && s.first_out_ns &&
        overlap_ns(s.end_ns, s.first_out_ns, from - kRequestLookbackNs, to) > 0)
      longs.push_back(&s);
  if (longs.empty()) return;
  const auto& pids = ev.engine_pids(part.server_pid);
  const EnginePasses& ep = prefill_engine_passes(state, ev, part.server_pid);
  std::vector<std::pair<int64_t, int64_t>> spans;
  // The culprit is the long requests themselves: ids, and for each its prompt (tokens when the
  // server said, else bytes) and tenant (another tenant's, often: evidence is never filtered
  // by the question's tenant).
  std::vector<LongRequest> named;
  auto name = [&](const RequestSpan& s) {
    if (named.size() < kMaxLongRequestsNamed &&
        std::none_of(named.begin(), named.end(), [&](const LongRequest& l) { return l.id == s.id; }))
      named.push_back({.id = s.id, .prompt_tokens = s.prompt_tokens, .prompt_bytes = s.prompt_bytes, .tenant = s.tenant});
  };
  auto culprit_of = [&](uint32_t pid, PrefillBasis basis) {
    Culprit c{.pid = pid, .share_kind = ShareKind::none};
    c.long_requests = std::move(named);
    c.basis = basis;
    return c;
  };
  if (ep.scan.passes.empty()) {
    for (const RequestSpan* s : longs) {
      if (overlap_ns(s->end_ns, s->first_out_ns, from, to) <= 0) continue;
      spans.emplace_back(s->end_ns, s->first_out_ns);
      name(*s);
    }
    const double lost = covered_ns(std::move(spans), from, to);
    out.push_back({RequestCause::prefill_interference, lost, culprit_of(pids.size() > 1 ? pids[1] : pids[0], PrefillBasis::prompt_bytes)});
    return;
  }
  const int64_t median = ep.median_ns;
  const auto& all = ep.scan.passes;
  // Passes by start: the first that can still reach `from` starts at most the longest pass before it.
  auto it = std::lower_bound(all.begin(), all.end(), from - ep.longest_ns,
                             [](const ForwardPass& p, int64_t t) { return p.start_ns < t; });
  int64_t longest = 0;
  uint32_t pass_pid = 0;
  for (; it != all.end() && it->start_ns < to; ++it) {
    const ForwardPass& p = *it;
    const int64_t excess = p.dur_ns() - median;
    if (p.end_ns <= from || static_cast<double>(p.dur_ns()) < kLongPassFactor * static_cast<double>(median) ||
        excess < kLongPassMinExcessNs)
      continue;
    bool during_prefill = false;
    for (const RequestSpan* s : longs)
      if (overlap_ns(s->end_ns, s->first_out_ns, p.start_ns, p.end_ns) > 0) during_prefill = true, name(*s);
    if (!during_prefill) continue;
    // What a median pass would not have taken: the pass's last `excess` ns.
    spans.emplace_back(p.end_ns - excess, p.end_ns);
    if (p.dur_ns() > longest) longest = p.dur_ns(), pass_pid = p.pid;
  }
  const double lost = covered_ns(std::move(spans), from, to);
  Culprit culprit = culprit_of(pass_pid, PrefillBasis::forward_pass);
  culprit.pass_ms = static_cast<double>(longest) / 1e6;
  culprit.median_pass_ms = static_cast<double>(median) / 1e6;
  out.push_back({RequestCause::prefill_interference, lost, std::move(culprit)});
}

const char* PrefillInterferenceRequestCause::recommendation([[maybe_unused]] const Culprit& culprit) {
  return "Bound the prefill a decode step waits for: enable chunked prefill (vLLM --enable-chunked-prefill with a "
         "smaller --max-num-batched-tokens), or route long prompts to their own replica.";
}

// How it was seen: from the engine's forward passes, or, when they cannot be delimited, from
// the long requests' prompt bytes alone.
RequestChainWords PrefillInterferenceRequestCause::chain_words(const Culprit& culprit) {
  if (culprit.basis == PrefillBasis::forward_pass)
    return {"",
            {"forward passes (the engine thread's launches up to the sync that waits for them): a " +
             one_decimal(culprit.pass_ms.value_or(0.0)) + " ms pass against a median pass of " +
             one_decimal(culprit.median_pass_ms.value_or(0.0)) + " ms, during the long requests' prefill"}};
  return {"",
          {"forward passes could not be delimited (no sync waits for the engine's launches, e.g. asynchronous scheduling, "
           "or no CUDA calls traced): inferred from the long requests' prompt bytes and their prefill time"}};
}

}  // namespace causeway::requests
