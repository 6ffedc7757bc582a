// The scenario interface shared by the synth/scenario_*.cpp files.
#pragma once

#include <cstdint>

#include "synth/demo_builder.h"

namespace causeway::synth {

struct ScenarioContext {
  DemoBuilder& b;
  Rng& rng;
  int64_t t0;        // first timestamp (Unix ns)
  int64_t duration;  // length of the session's data
  bool (*stop)();    // polled between steps; true = stop early (SIGINT)
  bool stopped() const { return stop && stop(); }
};

using ScenarioFn = void (*)(ScenarioContext&);

// Background noise every scenario shares: short kworker preemptions outside CUDA calls.
void noise_preempt(ScenarioContext& c, uint32_t tid, uint32_t pid, int32_t cpu, int64_t from, int64_t until);

struct TrainerSpec;  // synth/trainer.h
// An undisturbed training job of this shape, with the background noise.
void steady_training(ScenarioContext& c, const TrainerSpec& spec);

void scenario_quiet(ScenarioContext& c);
void scenario_incident(ScenarioContext& c);
void scenario_cold_start(ScenarioContext& c);
void scenario_memcpy_bottleneck(ScenarioContext& c);
void scenario_periodic_spike(ScenarioContext& c);
void scenario_gpu_steal(ScenarioContext& c);
void scenario_nccl_straggler(ScenarioContext& c);
void scenario_io_stall(ScenarioContext& c);
void scenario_oom(ScenarioContext& c);
void scenario_lock_contention(ScenarioContext& c);
void scenario_network(ScenarioContext& c);
void scenario_dataloader(ScenarioContext& c);
void scenario_host_bound(ScenarioContext& c);
void scenario_launch_bound(ScenarioContext& c);
void scenario_graph_recapture(ScenarioContext& c);
void scenario_requests_quiet(ScenarioContext& c);
void scenario_requests_cpu(ScenarioContext& c);
void scenario_requests_prefill(ScenarioContext& c);
void scenario_requests_queueing(ScenarioContext& c);
void scenario_requests_kv_cache(ScenarioContext& c);
void scenario_requests_tp_straggler(ScenarioContext& c);
void scenario_requests_slow_client(ScenarioContext& c);

// Well-known pids of the cast, so tests and docs can name them.
inline constexpr uint32_t kTrainerPid = 4821;
inline constexpr uint32_t kKworkerPid = 87;
// The inference server of the request scenarios: vLLM's API server and its engine core.
inline constexpr uint32_t kApiServerPid = 5300;
inline constexpr uint32_t kEngineCorePid = 5301;
inline constexpr uint32_t kTpWorkerPid = 5302;  // rank r: 5302 + r

}  // namespace causeway::synth
