// Inference serving (docs/INFERENCE.md): a vLLM-shaped server streaming completions to
// closed-loop clients, its engine's /metrics scraped each second, and one planted cause of
// slow requests per scenario. Token times are built the way an engine produces them: one
// decode step every ~20 ms for every running stream, and nothing while the engine is
// stalled (its thread preempted, a long prefill) except for what the stall is.
#include <algorithm>

#include "bpf/events.h"
#include "requests/to_record.h"
#include "synth/scenario.h"

namespace causeway::synth {
namespace {

constexpr int64_t kStep = 20 * kMs;
constexpr int kStreams = 4;
constexpr int kTokens = 16;

struct Incidents {
  std::vector<std::pair<int64_t, int64_t>> stalls;  // the engine produced no token (all streams)
  std::vector<std::pair<int64_t, int64_t>> prefills;  // long prefills' forward passes (also stalls)
  int long_every = 0;                               // every Nth request: a long prompt whose prefill stalls the rest
  int64_t burst_at = 0;                             // a burst of extra requests queued at this time
  int burst = 0;
  std::vector<int64_t> preemptions;                 // the k-th: stream k mod 4's request, stalled 500 ms
  bool tp = false;  // two tensor-parallel workers run the passes; each stall is rank 1 entering the all-reduce late
  int slow_stream = -1;  // this stream's client stops reading for ~300 ms in every slow_every-th request
  int slow_every = 0;
};

struct Scrape {
  double running = kStreams, waiting = 0, kv = 0.35, preempted = 0;
};

// The next time at or after t the engine is not stalled.
int64_t after_stalls(const std::vector<std::pair<int64_t, int64_t>>& stalls, int64_t t) {
  for (const auto& [a, b] : stalls)
    if (t >= a && t < b) t = b;
  return t;
}

// Stream s keeps one connection: fd 20 + s, client port 50112 + s.
requests::Request new_request(const std::string& id, int64_t start, uint64_t prompt_bytes, int stream = 0) {
  requests::Request r;
  r.pid = kApiServerPid;
  r.fd = 20 + stream;
  r.request_id = id;
  r.method = "POST";
  r.path = "/v1/completions";
  r.tenant = "team-a";
  r.peer = "10.0.4.21:" + std::to_string(50112 + stream);
  r.start_ns = start;
  r.end_ns = start + 300 * kUs;
  r.first_byte_ns = r.end_ns + 400 * kUs;
  r.status = 200;
  r.prompt_bytes = prompt_bytes;
  r.streamed = true;
  r.complete = true;
  return r;
}

// The engine core's GPU work: four kernels and a stream sync a decode step, none while it
// is stalled (the stall is what each scenario plants, not a slow call), but a long prefill's
// own forward pass: its kernels and a sync that waits until the prefill is done.
void engine_core_passes(ScenarioContext& c, const std::vector<std::pair<int64_t, int64_t>>& stalls,
                        const std::vector<std::pair<int64_t, int64_t>>& prefills, int64_t end) {
  DemoBuilder& b = c.b;
  const uint64_t st_launch = b.stack({"libcudart.so.13!cudaLaunchKernel+0x4", "vllm/v1/worker/gpu_model_runner.py:1490 (execute_model)"});
  const uint64_t st_sync = b.stack({"libcudart.so.13!cudaStreamSynchronize+0x4", "vllm/v1/worker/gpu_model_runner.py:1602 (execute_model)"});
  // One pass from t: its launches, then a sync returning at `until` (0: a decode step's ~14 ms).
  auto pass = [&](int64_t t, int64_t until) {
    int64_t at = t;
    for (int k = 0; k < 4; ++k) {
      const int64_t dur = c.rng.around(6 * kUs);
      b.call(kEngineCorePid, kEngineCorePid, CW_OP_CUDA_LAUNCH_KERNEL, at, dur, {0, 0x7f10a000 + 0x40 * k, 0, 0}, 0, st_launch, 2);
      at += dur + c.rng.around(3 * kUs);
    }
    const int64_t wait = until > at ? until - at : c.rng.around(14 * kMs, 0.05);
    b.call(kEngineCorePid, kEngineCorePid, CW_OP_CUDA_STREAM_SYNC, at, wait, {0, 0, 0, 0}, 0, st_sync, 2);
    return at + wait;
  };
  size_t p = 0;
  for (int64_t t = c.t0 + 5 * kMs; t < end - kStep && !c.stopped();) {
    int64_t done = pass(t, 0);
    const int64_t next = t + c.rng.around(kStep, 0.04);
    for (; p < prefills.size() && prefills[p].first < next; ++p)
      if (prefills[p].second > done + kMs) done = pass(std::max(prefills[p].first, done + 50 * kUs), prefills[p].second);
    t = after_stalls(stalls, next);
  }
}

// Tensor parallel (vLLM V1's multiproc executor): the engine core hands each pass to two
// workers, each launching its share of the kernels and joining one all-reduce (the
// communicator formed at start-up, traced), then syncing. A stall is rank 1 entering the
// pass's all-reduce late: rank 0 waits in it, and no stream gets a token until it ends.
void tp_passes(ScenarioContext& c, const std::vector<std::pair<int64_t, int64_t>>& stalls, int64_t end) {
  DemoBuilder& b = c.b;
  constexpr int64_t kComm = 0x5eedc0ffee01;
  for (uint32_t r = 0; r < 2; ++r) {
    b.process(kTpWorkerPid + r, kEngineCorePid, "VllmWorker-" + std::to_string(r), "VLLM::Worker_TP" + std::to_string(r),
              "/usr/bin/python3.12", c.t0, end);
    b.call(kTpWorkerPid + r, kTpWorkerPid + r, CW_OP_NCCL_COMM_INIT_RANK, c.t0 + kMs, c.rng.around(3 * kMs), {0, kComm, r, 2}, 0, 0,
           static_cast<int32_t>(4 + r));
  }
  const uint64_t st_ar = b.stack({"libnccl.so.2!ncclAllReduce+0x4", "vllm/distributed/communication_op.py:14 (tensor_model_parallel_all_reduce)"});
  int64_t seq = 0;
  auto pass = [&](int64_t t, int64_t late_until) {
    int64_t last = 0;
    std::array<int64_t, 2> entered{};
    for (uint32_t r = 0; r < 2; ++r) {
      int64_t at = t + c.rng.around(20 * kUs, 0.2);
      for (int k = 0; k < 2; ++k) {
        const int64_t dur = c.rng.around(6 * kUs);
        b.call(kTpWorkerPid + r, kTpWorkerPid + r, CW_OP_CUDA_LAUNCH_KERNEL, at, dur, {0, 0x7f10a000 + 0x40 * k, 0, 0}, 0, 0,
               static_cast<int32_t>(4 + r));
        at += dur + c.rng.around(3 * kUs);
      }
      if (r == 1 && late_until) at = late_until;
      entered[r] = at;
      last = std::max(last, at);
    }
    const int64_t done = last + c.rng.around(12 * kMs, 0.05);
    for (uint32_t r = 0; r < 2; ++r) {
      const int64_t d = c.rng.around(25 * kUs);
      b.call(kTpWorkerPid + r, kTpWorkerPid + r, CW_OP_NCCL_ALL_REDUCE, entered[r], d, {8 << 20, kComm, r, 2, seq, 0}, 0, st_ar,
             static_cast<int32_t>(4 + r));
      b.call(kTpWorkerPid + r, kTpWorkerPid + r, CW_OP_CUDA_STREAM_SYNC, entered[r] + d, done - entered[r] - d, {0, 0, 0, 0}, 0, 0,
             static_cast<int32_t>(4 + r));
    }
    ++seq;
  };
  for (int64_t t = c.t0 + 5 * kMs; t < end - kStep && !c.stopped();) {
    pass(t, 0);
    int64_t next = t + c.rng.around(kStep, 0.04);
    bool late = false;
    for (const auto& [a, z] : stalls)
      if (next >= a && next < z) {
        pass(a, z);  // the late pass: rank 1 enters when the stall ends
        next = z + c.rng.around(kStep, 0.04);
        late = true;
      }
    t = late ? next : after_stalls(stalls, next);
  }
}

// The engine's own view, scraped each second: running, waiting (the burst's queue), KV cache
// use (full around a preemption) and the preemption count.
void engine_scrapes(ScenarioContext& c, const Incidents& inc, int64_t end) {
  DemoBuilder& b = c.b;
  double preempted = 0;
  for (int64_t ts = c.t0 + kSec; ts < end; ts += kSec) {
    Scrape s;
    if (inc.burst && ts > inc.burst_at && ts < inc.burst_at + (inc.burst + 1) * 80 * kMs + kSec)
      s.waiting = std::max<int64_t>(0, inc.burst - (ts - inc.burst_at) / (80 * kMs));
    for (int64_t p : inc.preemptions) {
      if (p <= ts && p > ts - kSec) ++preempted;
      if (p > ts - kSec && p < ts + kSec) s.kv = 0.97;
    }
    s.preempted = preempted;
    EngineSampleRecord e;
    e.ts_ns = ts;
    e.pid = kApiServerPid;
    e.engine = "vllm";
    e.url = "http://127.0.0.1:8000/metrics";
    const std::string l = "engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"";
    e.samples = {{"vllm:num_requests_running", l, s.running},
                 {"vllm:num_requests_waiting", l, s.waiting},
                 {"vllm:kv_cache_usage_perc", l, s.kv},
                 {"vllm:num_preemptions_total", l, s.preempted}};
    b.engine_scrape(e);
  }
}

void serve(ScenarioContext& c, Incidents inc) {
  DemoBuilder& b = c.b;
  const int64_t end = c.t0 + c.duration;
  b.process(kApiServerPid, 1, "python3", "vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8000",
            "/usr/bin/python3.12", c.t0, end);
  b.process(kEngineCorePid, kApiServerPid, "VLLM::EngineCor", "VLLM::EngineCore", "/usr/bin/python3.12", c.t0, end);
  // Long prefills stall everyone else: each long request's prefill is a stall window.
  std::vector<requests::Request> out;
  std::vector<int> stream_of;
  std::vector<bool> slow_reader;  // the client stops reading mid-stream
  int n = 0;
  for (int s = 0; s < kStreams; ++s) {
    int64_t t = c.t0 + s * 7 * kMs;
    for (int on_stream = 0; t < end - 2 * kSec && !c.stopped(); ++on_stream) {
      const bool long_prompt = inc.long_every && n % inc.long_every == inc.long_every - 1;
      const bool slow = s == inc.slow_stream && on_stream % inc.slow_every == inc.slow_every - 1;
      requests::Request r = new_request("req-" + std::to_string(n++) + "-" + std::to_string(s), t,
                                        long_prompt ? 16000 : 180 + c.rng.next() % 80, s);
      int64_t tok = r.end_ns + c.rng.around(30 * kMs, 0.1);
      if (long_prompt) {
        const int64_t prefill = c.rng.around(320 * kMs, 0.05);
        inc.stalls.emplace_back(r.end_ns, r.end_ns + prefill);
        inc.prefills.emplace_back(r.end_ns, r.end_ns + prefill);
        tok = r.end_ns + prefill + 2 * kMs;
      }
      r.token_ns.push_back(tok);
      out.push_back(std::move(r));
      stream_of.push_back(s);
      slow_reader.push_back(slow);
      // The rest of its tokens are placed below, once every stall is known; a slow reader's
      // next request waits for its response to end.
      t += c.rng.around(420 * kMs, 0.05) + (slow ? 320 * kMs : 0);
    }
  }
  std::sort(inc.stalls.begin(), inc.stalls.end());
  std::sort(inc.prefills.begin(), inc.prefills.end());
  // The decode steps: every stream's tokens every ~20 ms, none inside a stall (but the long
  // request's own first token, which ends its stall). The k-th preemption takes stream
  // k mod 4: its running request streams nothing for 500 ms.
  for (size_t i = 0; i < out.size(); ++i) {
    requests::Request& r = out[i];
    int64_t t = r.token_ns.front();
    if (r.prompt_bytes < 16000) t = after_stalls(inc.stalls, t), r.token_ns.front() = t;
    int64_t blocked_until = 0;  // a slow reader: tokens made before it leave together then
    for (int k = 1; k < kTokens; ++k) {
      const int64_t prev = t;
      t = after_stalls(inc.stalls, t + c.rng.around(kStep, 0.06));
      for (size_t p = 0; p < inc.preemptions.size(); ++p)
        if (static_cast<int>(p % kStreams) == stream_of[i] && inc.preemptions[p] > prev && inc.preemptions[p] <= t)
          t = inc.preemptions[p] + 500 * kMs;
      r.token_ns.push_back(std::max(t, blocked_until));
      if (slow_reader[i] && k == 5) {
        // The client stopped reading: this token's write fills the send buffer and is cut
        // short; the rest waits until the client reads again ~300 ms later.
        blocked_until = t + c.rng.around(300 * kMs, 0.05);
        b.host_event(kApiServerPid, kApiServerPid, CW_OP_SOCK_SEND_WAIT, t, blocked_until - t, {r.fd, 0, 2, 0, 0, 0});
      }
    }
    r.last_byte_ns = std::max(t, blocked_until) + 200 * kUs;
  }
  // A burst beyond the batch: extra requests wait in the engine's queue, admitted one per
  // finished stream (~every 80 ms), so the k-th waits k × 80 ms for its first token.
  for (int k = 0; k < inc.burst; ++k) {
    requests::Request r = new_request("burst-" + std::to_string(k), inc.burst_at + k * kMs, 200);
    int64_t t = r.end_ns + (k + 1) * 80 * kMs + c.rng.around(30 * kMs, 0.1);
    for (int j = 0; j < kTokens; ++j) r.token_ns.push_back(t += (j ? c.rng.around(kStep, 0.06) : 0));
    r.last_byte_ns = t + 200 * kUs;
    out.push_back(std::move(r));
  }
  // What an OpenAI-style server with include_usage says: the model, ~4 prompt bytes a token,
  // one token an event (docs/INFERENCE.md "Model and tokens").
  for (auto& r : out) {
    r.model = "meta-llama/Llama-3.1-8B-Instruct";
    r.input_tokens = r.prompt_bytes / 4;
    r.output_tokens = r.token_ns.size();
    r.content_events = static_cast<uint32_t>(r.token_ns.size());
    if (r.last_byte_ns < end) b.request(requests::to_record(r));
  }

  if (inc.tp) {
    tp_passes(c, inc.stalls, end);
  } else {
    engine_core_passes(c, inc.stalls, inc.prefills, end);
  }

  engine_scrapes(c, inc, end);
}

}  // namespace

void scenario_requests_quiet(ScenarioContext& c) { serve(c, {}); }

void scenario_requests_cpu(ScenarioContext& c) {
  // tar on the engine core's CPU: every 3 s it takes the core for ~180 ms.
  constexpr uint32_t kTar = 992;
  c.b.process(kTar, 1, "tar", "tar czf /backup/ckpt.tgz /models", "/usr/bin/tar", c.t0, c.t0 + c.duration);
  Incidents inc;
  for (int64_t t = c.t0 + 2 * kSec; t < c.t0 + c.duration - 3 * kSec; t += 3 * kSec) {
    const int64_t len = c.rng.around(180 * kMs, 0.1);
    inc.stalls.emplace_back(t, t + len);
    c.b.preempt(kEngineCorePid, kEngineCorePid, 2, t, t + len, kTar, kTar);
  }
  serve(c, inc);
}

void scenario_requests_prefill(ScenarioContext& c) {
  Incidents inc;
  inc.long_every = 12;
  serve(c, inc);
}

void scenario_requests_queueing(ScenarioContext& c) {
  Incidents inc;
  inc.burst_at = c.t0 + 8 * kSec + 600 * kMs;
  inc.burst = 14;
  serve(c, inc);
}

void scenario_requests_tp_straggler(ScenarioContext& c) {
  // Tensor-parallel rank 1 starts a forward pass ~200 ms late every 3 s.
  Incidents inc;
  inc.tp = true;
  for (int64_t t = c.t0 + 2 * kSec + 300 * kMs; t < c.t0 + c.duration - 3 * kSec; t += 3 * kSec)
    inc.stalls.emplace_back(t, t + c.rng.around(200 * kMs, 0.1));
  serve(c, inc);
}

void scenario_requests_slow_client(ScenarioContext& c) {
  // Stream 2's client stops reading its stream for ~300 ms in every 6th request (~every 3 s).
  Incidents inc;
  inc.slow_stream = 2;
  inc.slow_every = 6;
  serve(c, inc);
}

void scenario_requests_kv_cache(ScenarioContext& c) {
  Incidents inc;
  for (int64_t t = c.t0 + 3 * kSec + 400 * kMs; t < c.t0 + c.duration - 4 * kSec; t += 4 * kSec)
    for (int k = 0; k < 2; ++k) inc.preemptions.push_back(t + k * 50 * kMs);
  serve(c, inc);
}

}  // namespace causeway::synth
