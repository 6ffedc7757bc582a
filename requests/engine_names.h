// Which inference engine serves a port, and which of its Prometheus metrics causeway keeps
// and reads (docs/INFERENCE.md "Engine metrics"). The names are the engines' own, from their
// sources: vLLM V1 vllm/v1/metrics/loggers.py, TGI docs/source/reference/metrics.md (the
// router's metrics), SGLang python/sglang/srt/metrics/collector.py.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "requests/prom_text.h"

namespace causeway::requests {

enum class Engine : uint8_t { unknown, vllm, tgi, sglang };
const char* engine_name(Engine e);

// From a process's command line (NUL-separated as /proc/PID/cmdline has it) or process
// title: `vllm serve`, vLLM V1's `VLLM::EngineCore`, `text-generation-launcher` /
// `text-generation-router`, `python -m sglang.launch_server`, `sglang::scheduler`.
Engine engine_from_cmdline(std::string_view cmdline);

// From the metric names an endpoint serves (`vllm:`, `tgi_`, `sglang:` prefixes).
Engine engine_from_samples(const std::vector<PromSample>& samples);

// The samples stored for a known engine: its scheduler, KV-cache, preemption, prefix-cache
// and spec-decode metrics and its own latency histograms. An unknown endpoint keeps all.
bool keep_sample(Engine e, std::string_view name);

// What the request causes read, by role, across the three engines (values summed over
// label sets: data-parallel engines expose one series each).
enum class Role : uint8_t { running, waiting, kv_cache_usage, preemptions };
const std::vector<std::string_view>& role_names(Role r);

}  // namespace causeway::requests
