#include "collector/request_metrics_feed.h"

#include <nlohmann/json.hpp>

#include "collector/proc_info.h"
#include "metrics/genai_semconv.h"
#include "diagnosis/causes/request_registry.h"
#include "diagnosis/request_latency.h"

namespace causeway::collector {

std::optional<uint64_t> output_token_count(const RequestRecord& r) {
  std::optional<uint64_t> counted;
  if (r.output_tokens && *r.output_tokens >= 0) counted = static_cast<uint64_t>(*r.output_tokens);
  return genai::output_tokens_of(counted, r.streamed, r.events);
}

std::optional<std::string> request_model(const RequestRecord& r) {
  if (r.model.empty()) return std::nullopt;
  return r.model;
}

RequestFacts request_facts(const RequestRecord& r, const std::string& comm) {
  RequestFacts f;
  f.server_pid = r.server_pid;
  f.comm = comm;
  f.path = r.path;
  f.tenant = r.tenant;
  f.model = request_model(r);
  f.status = r.status;
  f.end_reason = r.end_reason;
  f.tpot_ns = r.tpot_ns;
  f.ttft_ns = r.ttft_ns;
  f.e2e_ns = r.e2e_ns;
  // First token → last token: the sum of the gaps, from the stored µs values, so that the
  // live histogram and `causeway requests` (which reads them back) bin the same number.
  const nlohmann::json gaps = nlohmann::json::parse(r.itl_us.empty() ? "[]" : r.itl_us, nullptr, false);
  if (gaps.is_array())
    for (const auto& g : gaps)
      if (g.is_number_integer()) f.decode_ns += g.get<int64_t>() * 1000;
  f.output_tokens = output_token_count(r);
  return f;
}

RequestMetricsFeed::RequestMetricsFeed(MetricsRegistry& registry) : registry_(registry) {
  for (requests::Metric m : {requests::Metric::ttft, requests::Metric::itl}) {
    for (int c = 0; c < requests::kRequestCauseCount; ++c)
      registry_.requests().set_time_lost(requests::metric_name(m),
                                         std::string(requests::RequestCauses::name(static_cast<requests::RequestCause>(c))), 0);
    registry_.requests().set_time_lost(requests::metric_name(m), "unexplained", 0);
  }
}

void RequestMetricsFeed::observe(const RequestRecord& r) {
  auto it = comms_.find(r.server_pid);
  if (it == comms_.end()) it = comms_.emplace(r.server_pid, read_comm(r.server_pid)).first;
  registry_.requests().observe(request_facts(r, it->second));
}

void RequestMetricsFeed::publish_time_lost(sqlite3* ro, int64_t session_id) {
  for (requests::Metric m : {requests::Metric::ttft, requests::Metric::itl}) {
    requests::RequestQuery q;
    q.session_id = session_id;
    q.metric = m;
    q.slowest = 0;
    auto doc = requests::request_latency_json(ro, q);
    if (!doc) return;
    // The numbers `causeway requests --json` reports under the same name (its "semconv").
    const nlohmann::json& lost = (*doc)["requests"]["semconv"][genai::kTimeLostName]["causes"];
    for (const auto& [cause, seconds] : lost.items())
      registry_.requests().set_time_lost(requests::metric_name(m), cause, seconds.get<double>());
  }
}

}  // namespace causeway::collector
