#include "synth/scenarios.h"

#include "diagnosis/correlator.h"

#include <sys/utsname.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "diagnosis/request_chains.h"
#include "synth/scenario.h"
#include "tracedb/event_blocks.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

namespace causeway {
namespace {

using synth::kSec;

struct ScenarioDef {
  ScenarioInfo info;
  synth::ScenarioFn fn;
  int64_t natural_duration;
  double calls_per_sec;  // approximate, to size --events
};

const std::vector<ScenarioDef>& definitions() {
  static const std::vector<ScenarioDef> defs = {
      {{"incident", "tar on the trainer's CPU preempts it inside cudaStreamSynchronize (CPU contention)",
        "cpu_contention", "tar", 991},
       synth::scenario_incident, 40 * kSec, 7400},
      {{"cold-start", "context creation and module loading make the first calls of a new process slow", "cold_start",
        "", 0},
       synth::scenario_cold_start, 20 * kSec, 7400},
      {{"memcpy-bottleneck", "synchronous pageable cudaMemcpy of 256 MiB per step dominates the step (GPU idle)",
        "transfer_bound", "", 0},
       synth::scenario_memcpy_bottleneck, 30 * kSec, 400},
      {{"periodic-spike", "torch.cuda.empty_cache() every ~2 s: cudaFree/cudaMalloc storms (allocator)", "allocator",
        "", 0},
       synth::scenario_periodic_spike, 40 * kSec, 7400},
      {{"gpu-steal", "an inference server time-slices the same GPU: syncs 2-3x slower while on-CPU", "gpu_wait",
        "VLLM::EngineCor", 5120},
       synth::scenario_gpu_steal, 40 * kSec, 8000},
      {{"nccl-straggler", "4 ranks; rank 2 enters every allreduce late (its own input pipeline; preempted by rsync a third of the time)",
        "nccl_straggler", "python3", 6003},
       synth::scenario_nccl_straggler, 30 * kSec, 2400},
      {{"io-stall", "page faults on an mmap'd dataset wait behind updatedb's disk scan inside cudaMemcpy",
        "io_contention", "updatedb.mlocat", 2210},
       synth::scenario_io_stall, 40 * kSec, 2400},
      {{"oom", "java exhausts host memory: cudaMallocHost stalls in reclaim until the OOM killer ends java",
        "memory_pressure", "java", 7702},
       synth::scenario_oom, 40 * kSec, 7400},
      {{"lock-contention", "a checkpoint thread holds the allocator lock; cudaMalloc blocks until it wakes the trainer",
        "lock_contention", "pt_checkpoint", 4821},
       synth::scenario_lock_contention, 40 * kSec, 7400},
      {{"network", "TCP retransmits to the peer node stretch every allreduce of a 2-node job", "network", "", 0},
       synth::scenario_network, 40 * kSec, 5000},
      {{"dataloader", "4 DataLoader workers read samples from NVMe slower than the GPU consumes them (starvation)",
        "dataloader_starvation", "pt_data_worker", 4901},
       synth::scenario_dataloader, 30 * kSec, 1000},
      {{"host-bound", "CPU augmentation in the training loop itself: the GPU waits for the host every step", "host_bound",
        "", 0},
       synth::scenario_host_bound, 30 * kSec, 1000},
      {{"launch-bound", "100 tiny kernels per step at 23 us a launch: the GPU drains each before the next arrives",
        "launch_bound", "", 0},
       synth::scenario_launch_bound, 10 * kSec, 39000},
      {{"graph-recapture", "CUDA graphs re-captured every step once inputs change shape (replay defeated)",
        "graph_recapture", "", 0},
       synth::scenario_graph_recapture, 30 * kSec, 3000},
      {{"quiet", "a healthy training job: no chain should be HIGH", "", "", 0}, synth::scenario_quiet, 30 * kSec, 7400},
      // Inference serving: the cause is a request cause (causeway requests, explain's request
      // chains); the engine's calls are steady, so the correlator's chains stay below HIGH but
      // for tar's, which also delays the engine core's calls.
      {{"requests-quiet", "a vLLM server streaming to four clients, nothing wrong: no request chain should be HIGH", "",
        "", 0, ""},
       synth::scenario_requests_quiet, 30 * kSec, 250},
      {{"requests-cpu-contention", "tar takes the vLLM engine core's CPU for ~180 ms every 3 s: token gaps stall",
        "cpu_contention", "tar", 992, "cpu_contention"},
       synth::scenario_requests_cpu, 30 * kSec, 250},
      // The call level sees the engine's sync wait out that long pass: gpu_wait (GPU work was
      // launched before it), listed after the request chain.
      {{"requests-prefill", "every 12th prompt is 16 kB: its 320 ms prefill stalls the other streams' tokens",
        "gpu_wait", "", 0, "prefill_interference"},
       synth::scenario_requests_prefill, 30 * kSec, 250},
      {{"requests-queueing", "a burst of 14 requests beyond the batch waits in vLLM's queue for its first token", "",
        "", 0, "queueing"},
       synth::scenario_requests_queueing, 30 * kSec, 250},
      {{"requests-kv-cache", "the KV cache fills and vLLM preempts two streams every 4 s: 500 ms token gaps", "", "",
        0, "kv_cache_pressure"},
       synth::scenario_requests_kv_cache, 30 * kSec, 250},
      {{"requests-tp-straggler",
        "tensor-parallel rank 1 (VllmWorker-1) enters a forward pass's all-reduce ~200 ms late every 3 s: every stream stalls",
        // The correlator names a rank a straggler only when it is late in most of its
        // collectives: one late pass in 150 is the request level's to see.
        "", "VllmWorker-1", 5303, "nccl_straggler"},
       synth::scenario_requests_tp_straggler, 30 * kSec, 250},
      {{"requests-slow-client",
        "one client (10.0.4.21:50114) stops reading its stream for ~300 ms every 3 s: the server's writes to it wait on a "
        "full send buffer",
        "", "", 0, "network"},
       synth::scenario_requests_slow_client, 30 * kSec, 250},
  };
  return defs;
}

std::string kernel_release() {
  utsname u{};
  if (uname(&u) != 0) return "";
  return std::string(u.sysname) + " " + u.release;
}

// Call events the scenario writes when run for `duration` (into a scratch DB next to
// db_path, removed after).
Result<uint64_t> pilot_calls(const ScenarioDef& def, const std::string& db_path, int64_t duration, uint64_t seed) {
  const std::string scratch = db_path + ".sizing-" + std::to_string(getpid());
  // Removed as the user the DB is for (root under sudo: the folder may hold that user's links).
  auto as = write_identity_for(scratch);
  if (!as) return as.error();
  auto remove_scratch = [&] {
    if (auto scope = AsFsUser::enter(*as))
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((scratch + suffix).c_str());
  };
  remove_scratch();
  uint64_t calls = 0;
  {
    auto writer = StoreWriter::open(scratch, WriterOptions{.holder = "causeway demo"});
    if (!writer) return writer.error();
    SessionInfo info;
    info.source_kind = "demo";
    info.label = def.info.name;
    info.started_ns = kSec;
    auto sid = (*writer)->begin_session(info);
    if (!sid) return sid.error();
    synth::Rng rng(seed);
    synth::DemoBuilder builder(**writer);
    synth::ScenarioContext ctx{builder, rng, kSec, duration, nullptr};
    def.fn(ctx);
    calls = builder.calls();
    (void)(*writer)->close(kSec + duration);
  }
  remove_scratch();
  return calls;
}

// The scenario time that yields about `events` call events. Scenarios mix phases of
// different call rates (warm-up, bursts, periodic stalls such as network's 20 s loss cycle),
// so the rate is measured rather than tabulated: pilot runs of half and all of the natural
// duration (which spans whole cycles) fit calls = fixed + rate * duration.
Result<int64_t> duration_for_events(const ScenarioDef& def, const std::string& db_path, uint64_t events, uint64_t seed) {
  const int64_t d1 = def.natural_duration / 2, d2 = def.natural_duration;
  auto c1 = pilot_calls(def, db_path, d1, seed);
  if (!c1) return c1.error();
  auto c2 = pilot_calls(def, db_path, d2, seed);
  if (!c2) return c2.error();
  double rate = static_cast<double>(*c2 - *c1) / static_cast<double>(d2 - d1);  // calls per ns
  if (rate <= 0) rate = def.calls_per_sec / 1e9;
  double fixed = static_cast<double>(*c1) - rate * static_cast<double>(d1);
  double d = std::max(2e9, (static_cast<double>(events) - fixed) / rate);
  // A target of a few cycles ends inside one, where the average rate misleads; such a run is
  // cheap, so one more pilot at the estimate corrects it.
  if (d <= 2.0 * static_cast<double>(def.natural_duration)) {
    auto c3 = pilot_calls(def, db_path, static_cast<int64_t>(d), seed);
    if (!c3) return c3.error();
    if (*c3 > 0) d = std::max(2e9, d * static_cast<double>(events) / static_cast<double>(*c3));
  }
  return static_cast<int64_t>(d);
}

}  // namespace

const std::vector<ScenarioInfo>& demo_scenarios() {
  static const std::vector<ScenarioInfo> infos = [] {
    std::vector<ScenarioInfo> v;
    for (const auto& d : definitions()) v.push_back(d.info);
    return v;
  }();
  return infos;
}

Result<DemoSummary> run_demo(const std::string& db_path, const DemoOptions& options, bool (*stop)()) {
  const ScenarioDef* def = nullptr;
  for (const auto& d : definitions())
    if (d.info.name == options.scenario) def = &d;
  if (!def) {
    std::string names;
    for (const auto& d : definitions()) names += (names.empty() ? "" : ", ") + d.info.name;
    return make_error("usage", "unknown demo scenario '" + options.scenario + "'; choose one of: " + names);
  }
  int64_t duration = def->natural_duration;
  if (options.events > 0) {
    auto sized = duration_for_events(*def, db_path, options.events, options.seed);
    if (!sized) return sized.error();
    duration = *sized;
  }
  int64_t t0 = options.start_ns;
  if (t0 == 0) {
    int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    t0 = now - duration;
  }

  // The writer would cut its blocks where its queue happened to be drained; laid out by rows
  // as it writes them, the zone map (and the chains the correlator builds over it) is the same
  // on every run.
  auto writer =
      StoreWriter::open(db_path, WriterOptions{.holder = "causeway demo", .event_block_rows = kEventsPerLaidOutBlock});
  if (!writer) return writer.error();
  SessionInfo info;
  info.source_kind = "demo";
  info.label = def->info.name;
  info.host = "demo-gpu-node";
  info.kernel = kernel_release();
  info.gpus = "synthetic: 1x NVIDIA H100 80GB HBM3";
  info.driver_version = "synthetic";
  info.cuda_version = "13.0";
  info.started_ns = t0;
  // The demo host is made up: say so rather than pass this machine's identity off as the
  // traced host (kernel is this machine's, the GPU is the scenario's).
  info.system = nlohmann::json{{"hostname", info.host},
                               {"kernel", info.kernel},
                               {"cpus", 0},
                               {"gpus", nlohmann::json::array({{{"index", 0}, {"name", "NVIDIA H100 80GB HBM3 (synthetic)"}}})},
                               {"driver", nullptr},
                               {"driver_reason", "synthetic demo session: no real host or driver was traced"},
                               {"synthetic", true}}
                    .dump();
  auto sid = (*writer)->begin_session(info);
  if (!sid) return sid.error();

  synth::Rng rng(options.seed);
  synth::DemoBuilder builder(**writer);
  synth::ScenarioContext ctx{builder, rng, t0, duration, stop};
  def->fn(ctx);

  DemoSummary summary;
  summary.session_id = *sid;
  summary.interrupted = ctx.stopped();
  auto r = (*writer)->close(t0 + duration);
  WriterCounters counters = (*writer)->counters();
  if (!r) return r.error();
  // Demo data goes through the same diagnosis as live and imported data.
  auto chains = diagnose_and_store(db_path, *sid);
  if (!chains) return chains.error();
  // Then its requests' chains (none when the scenario served no requests).
  auto request_chains = requests::store_request_chains(db_path, *sid);
  if (!request_chains) return request_chains.error();
  summary.chains = *chains + *request_chains;
  summary.events_written = builder.calls();
  summary.sched_written = builder.sched_rows();
  summary.dropped = counters.dropped_writer;
  return summary;
}

}  // namespace causeway
