#include "requests/to_record.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace causeway::requests {

const char* request_end_name(RequestEnd e) {
  switch (e) {
    case RequestEnd::complete: return "complete";
    case RequestEnd::aborted: return "aborted";
    case RequestEnd::disconnected: return "disconnected";
    case RequestEnd::lost: return "lost";
    case RequestEnd::trace_end: return "trace_end";
  }
  return "lost";
}

namespace {

std::optional<int64_t> signed_count(const std::optional<uint64_t>& v) {
  if (!v) return std::nullopt;
  return static_cast<int64_t>(std::min<uint64_t>(*v, INT64_MAX));
}

// Time per output token after the first (OpenTelemetry's gen_ai.server.time_per_output_token):
// first to last write carrying generated text over the server's count minus one. Streamed
// responses only (a JSON body gives every token at once); null without the server's count.
std::optional<int64_t> tpot_of(const Request& r) {
  if (!r.streamed || !r.output_tokens || *r.output_tokens < 2) return std::nullopt;
  int64_t first = r.first_content_ns, last = r.last_content_ns;
  if (!first && !r.token_ns.empty()) first = r.token_ns.front(), last = r.token_ns.back();
  if (!first || last < first) return std::nullopt;
  return (last - first) / static_cast<int64_t>(std::min<uint64_t>(*r.output_tokens - 1, INT64_MAX));
}

}  // namespace

RequestRecord to_record(const Request& r) {
  RequestRecord o;
  o.request_id = r.request_id;
  o.id_generated = r.id_generated;
  o.server_pid = r.pid;
  o.fd = r.fd;
  o.method = r.method;
  o.path = r.path;
  o.tenant = r.tenant;
  o.peer = r.peer;
  o.start_ns = r.start_ns;
  o.end_ns = r.end_ns;
  o.read_end_ns = r.read_end_ns;
  if (r.read_end_ns && r.end_ns) o.api_wait_ns = std::max<int64_t>(0, r.read_end_ns - r.end_ns);
  o.first_byte_ns = r.first_byte_ns;
  o.last_byte_ns = r.last_byte_ns;
  o.status = r.status;
  o.prompt_bytes = r.prompt_bytes;
  o.response_bytes = r.response_bytes;
  o.streamed = r.streamed;
  o.complete = r.complete;
  o.tls = r.tls;
  o.events = static_cast<uint32_t>(r.token_ns.size());
  o.model = r.model;
  o.max_tokens = signed_count(r.max_tokens);
  o.input_tokens = signed_count(r.input_tokens);
  o.output_tokens = signed_count(r.output_tokens);
  o.tpot_ns = tpot_of(r);
  o.content_events = r.content_events;
  o.end_reason = request_end_name(r.end);
  // TTFT: streamed responses count from the first data: event (the response head written
  // before it does not count); others from their first byte.
  if (r.streamed && !r.token_ns.empty()) o.first_token_ns = r.token_ns.front();
  const int64_t first = r.streamed ? o.first_token_ns : r.first_byte_ns;
  if (first && r.end_ns) o.ttft_ns = std::max<int64_t>(0, first - r.end_ns);
  if (r.last_byte_ns) o.e2e_ns = std::max<int64_t>(0, r.last_byte_ns - r.start_ns);
  if (r.token_ns.size() >= 2) {
    std::string gaps = "[";
    int64_t max_gap = 0;
    for (size_t i = 1; i < r.token_ns.size(); ++i) {
      const int64_t g = std::max<int64_t>(0, r.token_ns[i] - r.token_ns[i - 1]);
      max_gap = std::max(max_gap, g);
      if (i > 1) gaps += ',';
      gaps += std::to_string((g + 500) / 1000);
    }
    o.itl_us = gaps + "]";
    o.itl_max_ns = max_gap;
  }
  return o;
}

}  // namespace causeway::requests
