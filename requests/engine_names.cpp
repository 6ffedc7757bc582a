#include "requests/engine_names.h"

#include <algorithm>
#include <array>

namespace causeway::requests {
namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// Base names (a histogram's _sum, _count and _bucket series, a counter's _total, follow them).
constexpr std::array<std::string_view, 22> kVllm = {
    "vllm:num_requests_running",          "vllm:num_requests_waiting",
    "vllm:num_requests_swapped",          "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",          "vllm:num_preemptions",
    "vllm:prefix_cache_queries",          "vllm:prefix_cache_hits",
    "vllm:gpu_prefix_cache_queries",      "vllm:gpu_prefix_cache_hits",
    "vllm:spec_decode_num_drafts",        "vllm:spec_decode_num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens", "vllm:prompt_tokens",
    "vllm:generation_tokens",             "vllm:time_to_first_token_seconds",
    "vllm:inter_token_latency_seconds",   "vllm:time_per_output_token_seconds",
    "vllm:e2e_request_latency_seconds",   "vllm:request_queue_time_seconds",
    "vllm:request_prefill_time_seconds",  "vllm:request_decode_time_seconds"};
constexpr std::array<std::string_view, 9> kTgi = {
    "tgi_queue_size",           "tgi_batch_current_size",     "tgi_batch_current_max_tokens",
    "tgi_request_count",        "tgi_request_success",        "tgi_request_duration",
    "tgi_request_queue_duration", "tgi_request_mean_time_per_token_duration", "tgi_batch_forward_duration"};
constexpr std::array<std::string_view, 16> kSglang = {
    "sglang:num_running_reqs",      "sglang:num_queue_reqs",
    "sglang:token_usage",           "sglang:num_used_tokens",
    "sglang:max_total_num_tokens",  "sglang:cache_hit_rate",
    "sglang:num_retracted_reqs",    "sglang:num_retracted_requests",
    "sglang:spec_accept_length",    "sglang:spec_accept_rate",
    "sglang:prompt_tokens",         "sglang:generation_tokens",
    "sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds",
    "sglang:e2e_request_latency_seconds", "sglang:queue_time_seconds"};

// The exposed name's base: without a histogram's or a counter's suffix.
std::string_view base_of(std::string_view name) {
  for (std::string_view suf : {"_bucket", "_count", "_sum", "_total", "_created"})
    if (name.size() > suf.size() && name.substr(name.size() - suf.size()) == suf)
      return name.substr(0, name.size() - suf.size());
  return name;
}

template <size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view name) {
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  const std::string_view base = base_of(name);
  return base != name && std::find(names.begin(), names.end(), base) != names.end();
}

}  // namespace

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::vllm: return "vllm";
    case Engine::tgi: return "tgi";
    case Engine::sglang: return "sglang";
    case Engine::unknown: break;
  }
  return "unknown";
}

Engine engine_from_cmdline(std::string_view c) {
  if (contains(c, "VLLM::") || contains(c, "vllm")) return Engine::vllm;
  if (contains(c, "text-generation-launcher") || contains(c, "text-generation-router") ||
      contains(c, "text-generation-server"))
    return Engine::tgi;
  if (contains(c, "sglang")) return Engine::sglang;
  return Engine::unknown;
}

Engine engine_from_samples(const std::vector<PromSample>& samples) {
  for (const PromSample& s : samples) {
    if (s.name.rfind("vllm:", 0) == 0) return Engine::vllm;
    if (s.name.rfind("sglang:", 0) == 0) return Engine::sglang;
    if (s.name.rfind("tgi_", 0) == 0) return Engine::tgi;
  }
  return Engine::unknown;
}

bool keep_sample(Engine e, std::string_view name) {
  switch (e) {
    case Engine::vllm: return listed(kVllm, name);
    case Engine::tgi: return listed(kTgi, name);
    case Engine::sglang: return listed(kSglang, name);
    case Engine::unknown: break;
  }
  return true;
}

const std::vector<std::string_view>& role_names(Role r) {
  // Counters are stored as exposed, with prometheus_client's _total suffix.
  static const std::vector<std::string_view> running = {"vllm:num_requests_running", "tgi_batch_current_size",
                                                        "sglang:num_running_reqs"};
  static const std::vector<std::string_view> waiting = {"vllm:num_requests_waiting", "tgi_queue_size",
                                                        "sglang:num_queue_reqs"};
  // vLLM before 0.9 exposes only gpu_cache_usage_perc; after, both (the same value): the
  // reader takes the first listed name a sample has.
  static const std::vector<std::string_view> kv = {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
                                                   "sglang:token_usage"};
  static const std::vector<std::string_view> preempt = {"vllm:num_preemptions_total",
                                                        "sglang:num_retracted_requests_total"};
  switch (r) {
    case Role::running: return running;
    case Role::waiting: return waiting;
    case Role::kv_cache_usage: return kv;
    case Role::preemptions: return preempt;
  }
  return running;
}

}  // namespace causeway::requests
