// The OpenTelemetry GenAI server metrics as causeway measures them (docs/METRICS.md "Requests:
// the GenAI server metrics"): their Prometheus names, the conventions' advised buckets, and the
// per-request rule that decides what a request contributes. Header-only and pure, so the live
// /metrics (collector/request_metrics_feed.cpp) and `causeway requests --json`'s "semconv"
// object (requests/latency.cpp) apply one rule and count the same requests.
//
// Source: open-telemetry/semantic-conventions docs/gen-ai/gen-ai-metrics.md (status
// Development). Names as OpenTelemetry's Prometheus exporter writes them (the
// Prometheus/OpenMetrics compatibility spec): dots become underscores, the unit "s" appends
// "_seconds", histograms expose _bucket/_sum/_count.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace causeway::genai {

inline constexpr const char* kTtftName = "gen_ai_server_time_to_first_token_seconds";
inline constexpr const char* kTpotName = "gen_ai_server_time_per_output_token_seconds";
inline constexpr const char* kDurationName = "gen_ai_server_request_duration_seconds";
inline constexpr const char* kTtftOtelName = "gen_ai.server.time_to_first_token";
inline constexpr const char* kTpotOtelName = "gen_ai.server.time_per_output_token";
inline constexpr const char* kDurationOtelName = "gen_ai.server.request.duration";
inline constexpr const char* kRequestsName = "causeway_requests_total";
inline constexpr const char* kErrorsName = "causeway_request_errors_total";
inline constexpr const char* kAbortsName = "causeway_request_aborts_total";
inline constexpr const char* kDisconnectsName = "causeway_request_disconnects_total";
inline constexpr const char* kTimeLostName = "causeway_request_time_lost_seconds_total";

// ExplicitBucketBoundaries the conventions advise, in seconds.
inline constexpr std::array<double, 16> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                                        0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
inline constexpr std::array<double, 13> kTpotBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                        0.3,  0.4,   0.5,  0.75,  1.0, 2.5};
inline constexpr std::array<double, 14> kDurationBuckets = {0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                                            1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};

enum class Histogram : uint8_t { ttft, tpot, duration };
inline constexpr std::array<Histogram, 3> kHistograms = {Histogram::ttft, Histogram::tpot, Histogram::duration};

// How a request ended, from what the requests table stores (status, complete).
enum class Outcome : uint8_t {
  ok,            // a status below 400 and the whole response written
  error,         // status >= 400: error_type is the status code, as the conventions advise
  disconnected,  // a response began (status < 400) but was not completed: the client went away
  aborted,       // the server closed the connection before the response was complete
  incomplete,    // the framing was lost or the trace ended first: how it ended is not known
};

// From the stored end_reason (docs/INFERENCE.md "Errors"), so the counters here and the
// `aborted` / `disconnected` of `causeway requests` are the same numbers; an error status wins.
inline Outcome outcome_of(int status, std::string_view end_reason) {
  if (status >= 400) return Outcome::error;
  if (end_reason == "aborted") return Outcome::aborted;
  if (end_reason == "disconnected") return Outcome::disconnected;
  if (end_reason == "complete") return Outcome::ok;
  return Outcome::incomplete;
}

// The error_type label ("" for a success).
inline std::string error_type_of(int status, Outcome o) {
  switch (o) {
    case Outcome::ok: return "";
    case Outcome::error: return std::to_string(status);
    case Outcome::disconnected: return "disconnected";
    case Outcome::aborted: return "aborted";
    case Outcome::incomplete: return "incomplete";
  }
  return "";
}

// gen_ai.operation.name from the OpenAI-style path (the conventions' well-known values);
// paths no convention names are "unknown" rather than a value made up from traced bytes.
inline const char* operation_of(std::string_view path) {
  if (path == "/v1/chat/completions" || path == "/chat/completions") return "chat";
  if (path == "/v1/completions" || path == "/completions" || path == "/generate" || path == "/generate_stream" ||
      path == "/v1/generate")
    return "text_completion";
  if (path == "/v1/embeddings" || path == "/embeddings" || path == "/embed") return "embeddings";
  return "unknown";
}

// The output token count TPOT divides by: the request's counted output tokens when the row has
// them; until the requests table records a count, a streamed response's SSE data: events stand
// for its tokens (an OpenAI-style stream sends one token per event; a server that batches
// several tokens into one event makes TPOT read high by that factor), and a response that is
// not streamed has none (docs/METRICS.md "Tokens"). The one rule both /metrics and
// `causeway requests` apply.
inline std::optional<uint64_t> output_tokens_of(std::optional<uint64_t> counted, bool streamed, uint32_t events) {
  if (counted) return counted;
  if (!streamed) return std::nullopt;
  return events;
}

// What one request contributes to the three histograms, in whole nanoseconds (binned in ns so
// a value on a bound lands in that bound's bucket).
struct Observation {
  Outcome outcome = Outcome::ok;
  std::optional<int64_t> ttft_ns;      // successful responses only (the conventions' definition)
  std::optional<int64_t> tpot_ns;      // successful responses with at least two output tokens
  std::optional<int64_t> duration_ns;  // every request whose response began (error_type labels failures)
};

// decode_ns: first output token → last output token (the sum of the token gaps);
// output_tokens: output_tokens_of().
// stored_tpot_ns: the TPOT `causeway requests` reports (the writes carrying generated text),
// used as it is when the row has one.
inline Observation observe_request(int status, std::string_view end_reason, std::optional<int64_t> ttft_ns,
                                   std::optional<int64_t> e2e_ns, int64_t decode_ns,
                                   std::optional<uint64_t> output_tokens,
                                   std::optional<int64_t> stored_tpot_ns = std::nullopt) {
  Observation o;
  o.outcome = outcome_of(status, end_reason);
  if (o.outcome == Outcome::incomplete) return o;
  o.duration_ns = e2e_ns;
  if (o.outcome != Outcome::ok) return o;
  o.ttft_ns = ttft_ns;
  if (stored_tpot_ns) {
    o.tpot_ns = stored_tpot_ns;
    return o;
  }
  // (duration - time to the first token) / (tokens after the first): the decode time per token.
  if (output_tokens && *output_tokens >= 2 && decode_ns >= 0)
    o.tpot_ns = decode_ns / static_cast<int64_t>(*output_tokens - 1);
  return o;
}

// The bucket of a value: the index of the first bound >= it (le is inclusive), or
// bounds.size() for the +Inf bucket. Integer ns on both sides, so exact on every bound.
template <size_t N>
size_t bucket_index(const std::array<double, N>& bounds, int64_t ns) {
  for (size_t i = 0; i < N; ++i)
    if (ns <= static_cast<int64_t>(bounds[i] * 1e9 + 0.5)) return i;
  return N;
}

}  // namespace causeway::genai
