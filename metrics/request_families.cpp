#include "metrics/request_families.h"

#include <algorithm>

#include "common/sanitize.h"
#include "metrics/genai_semconv.h"

namespace causeway {
namespace {

template <size_t N>
void add_to_histogram(RequestHistogram& h, const std::array<double, N>& bounds, int64_t ns) {
  if (h.buckets.empty()) h.buckets.assign(N + 1, 0);
  ++h.buckets[genai::bucket_index(bounds, ns)];
  ++h.count;
  h.sum_ns += std::max<int64_t>(0, ns);
}

}  // namespace

RequestLabels RequestFamilies::labels_of(const RequestFacts& r) {
  RequestLabels l;
  l.server = servers_.admit(std::to_string(r.server_pid));
  l.comm = l.server == kOtherLabelValue ? kOtherLabelValue : sanitize_untrusted(r.comm, 16);
  l.operation = genai::operation_of(r.path);
  l.path = paths_.admit(r.path);
  l.tenant = tenants_.admit(r.tenant);
  if (r.model && !r.model->empty()) l.model = models_.admit(*r.model);
  // Values capped one by one still multiply: past kMaxLabelSets label sets, a new set keeps
  // its server and operation and folds the traced ones.
  if (!s_.series.count(l) && s_.series.size() >= kMaxLabelSets) {
    ++label_sets_folded_;
    l.path = l.tenant = kOtherLabelValue;
    if (!l.model.empty()) l.model = kOtherLabelValue;
  }
  return l;
}

void RequestFamilies::observe(const RequestFacts& r) {
  const genai::Observation o =
      genai::observe_request(r.status, r.end_reason, r.ttft_ns, r.e2e_ns, r.decode_ns, r.output_tokens, r.tpot_ns);
  std::lock_guard lock(mu_);
  RequestSeries& s = s_.series[labels_of(r)];
  ++s.requests;
  switch (o.outcome) {
    case genai::Outcome::ok: break;
    case genai::Outcome::error: ++s.errors[std::to_string(r.status)]; break;
    case genai::Outcome::disconnected: ++s.disconnects; break;
    case genai::Outcome::aborted: ++s.aborts; break;
    case genai::Outcome::incomplete: break;
  }
  if (o.ttft_ns) add_to_histogram(s.ttft, genai::kTtftBuckets, *o.ttft_ns);
  if (o.tpot_ns) add_to_histogram(s.tpot, genai::kTpotBuckets, *o.tpot_ns);
  if (o.duration_ns)
    add_to_histogram(s.duration[genai::error_type_of(r.status, o.outcome)], genai::kDurationBuckets, *o.duration_ns);
  s_.label_overflow["path"] = paths_.folded();
  s_.label_overflow["tenant"] = tenants_.folded();
  s_.label_overflow["gen_ai_request_model"] = models_.folded();
  s_.label_overflow["server"] = servers_.folded();
  s_.label_overflow["label_set"] = label_sets_folded_;
}

void RequestFamilies::set_time_lost(const std::string& metric, const std::string& cause, double seconds) {
  std::lock_guard lock(mu_);
  double& v = s_.time_lost[{metric, cause}];
  v = std::max(v, seconds);
}

RequestFamiliesSnapshot RequestFamilies::snapshot() const {
  std::lock_guard lock(mu_);
  return s_;
}

}  // namespace causeway
