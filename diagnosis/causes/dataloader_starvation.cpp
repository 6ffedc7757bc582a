#include "diagnosis/causes/dataloader_starvation.h"

#include <algorithm>
#include <cmath>

#include "common/argmax.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "diagnosis/data_workers.h"
#include "common/units.h"
#include "tracedb/op_args.h"

namespace causeway {
namespace {

// Longest stretch of a worker's time counted for one batch: a worker idle for seconds between
// two deliveries was not producing that batch all along.
constexpr int64_t kMaxBatchWindowNs = 2'000'000'000;

// What a worker spent the waits on; the largest share names it.
enum class WorkerDoing : uint8_t { block_io, cpu, runnable, waiting, unknown };

struct Doing {
  WorkerDoing what = WorkerDoing::unknown;
  double share = 0;  // of the time its activity was measured over
};

Doing doing_of(const DataLoaderStarvation::Worker& w) {
  const int64_t total = w.on_cpu_ns + w.io_wait_ns + w.runnable_ns + w.sleep_ns;
  if (!w.seen || total <= 0) return {w.io_requests > 0 ? WorkerDoing::block_io : WorkerDoing::unknown, 0};
  const int64_t top = std::max({w.io_wait_ns, w.on_cpu_ns, w.runnable_ns, w.sleep_ns});
  const double share = static_cast<double>(top) / static_cast<double>(total);
  if (top == w.io_wait_ns) return {WorkerDoing::block_io, share};
  if (top == w.on_cpu_ns) return {WorkerDoing::cpu, share};
  if (top == w.runnable_ns) return {WorkerDoing::runnable, share};
  return {WorkerDoing::waiting, share};
}

const char* doing_key(WorkerDoing d) {
  switch (d) {
    case WorkerDoing::block_io: return "block_io";
    case WorkerDoing::cpu: return "cpu";
    case WorkerDoing::runnable: return "runnable";
    case WorkerDoing::waiting: return "waiting";
    case WorkerDoing::unknown: return "unknown";
  }
  return "unknown";
}

std::string dev_text(int64_t dev) { return std::to_string(dev >> 20) + ":" + std::to_string(dev & 0xfffff); }

std::string io_text(const DataLoaderStarvation::Worker& w) {
  std::string devs;
  for (const auto& [dev, bytes] : w.io_bytes_by_dev) devs += (devs.empty() ? "" : ", ") + dev_text(dev);
  return with_commas(w.io_requests) + " block requests, " + format_bytes(w.io_bytes) + (devs.empty() ? "" : " on dev " + devs);
}

std::string doing_text(const DataLoaderStarvation::Worker& w, const Doing& d) {
  switch (d.what) {
    case WorkerDoing::block_io:
      return d.share > 0 ? pct(d.share) + " of the time producing those batches in disk reads (D state; " + io_text(w) + ")"
                         : "disk reads (" + io_text(w) + ")";
    case WorkerDoing::cpu: return pct(d.share) + " of the time producing those batches on-CPU (decoding / transforms)";
    case WorkerDoing::runnable: return pct(d.share) + " of the time producing those batches runnable but waiting for a CPU";
    case WorkerDoing::waiting: return pct(d.share) + " of the time producing those batches asleep itself (waiting on something upstream)";
    case WorkerDoing::unknown: return "no scheduler records of its own (not traced)";
  }
  return "";
}

struct Ranked {
  uint32_t pid;
  const DataLoaderStarvation::Worker* w;
};

std::vector<Ranked> ranked(const DataLoaderStarvation::Evidence& e) {
  std::vector<Ranked> v;
  for (const auto& [pid, w] : e.workers) v.push_back({pid, &w});
  std::sort(v.begin(), v.end(), [](const Ranked& a, const Ranked& b) {
    return a.w->waited_ns != b.w->waited_ns ? a.w->waited_ns > b.w->waited_ns : a.pid < b.pid;
  });
  return v;
}

// Summed over every worker: the activity that dominates the pipeline as a whole.
DataLoaderStarvation::Worker pooled(const DataLoaderStarvation::Evidence& e) {
  DataLoaderStarvation::Worker all;
  for (const auto& [pid, w] : e.workers) {
    all.seen = all.seen || w.seen;
    all.waits += w.waits;
    all.waited_ns += w.waited_ns;
    all.on_cpu_ns += w.on_cpu_ns;
    all.io_wait_ns += w.io_wait_ns;
    all.runnable_ns += w.runnable_ns;
    all.sleep_ns += w.sleep_ns;
    all.io_requests += w.io_requests;
    all.io_bytes += w.io_bytes;
    for (const auto& [d, b] : w.io_bytes_by_dev) all.io_bytes_by_dev[d] += b;
    for (const auto& [p, ns] : w.preempted_by_pid) all.preempted_by_pid[p] += ns;
  }
  return all;
}

// The GPU side of the story: the process's GPU waits returned at once, nothing was queued.
std::string gpu_idle_line(const ChainView& v) {
  const OpAcc* best = nullptr;
  uint16_t best_op = 0;
  for (const auto& [key, o] : v.s.ops) {
    auto op = static_cast<uint16_t>(key & 0xffff);
    if ((key >> 16) != v.a.pid || !is_gpu_wait_op(op) || o.count == 0) continue;
    if (!best || o.count > best->count) {
      best = &o;
      best_op = op;
    }
  }
  if (!best) return "";
  const auto p50 = static_cast<int64_t>(best->hist.percentile(0.5, best->min, best->max));
  return op_name(best_op) + " returned in " + format_duration_ns(p50) + " (p50 over " + with_commas(static_cast<int64_t>(best->count)) +
         " calls): the GPU had finished its queue before the thread came back — it idled while the thread waited for data";
}

}  // namespace

Finding DataLoaderStarvation::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  const auto rank = ranked(e);
  const Worker all = pooled(e);
  const Doing pool = doing_of(all);
  std::string names;
  for (size_t i = 0; i < rank.size() && i < 4; ++i) names += (i ? ", " : "") + who(v.s, rank[i].pid);
  if (rank.size() > 4) names += " and " + std::to_string(rank.size() - 4) + " more";
  const uint32_t tid = key_of_largest(a.tids, a.pid);
  double thread_share = 0;
  if (auto act = v.s.activity.find(tid); act != v.s.activity.end() && act->second.span() > 0)
    thread_share = static_cast<double>(a.off_ns) / static_cast<double>(act->second.span());
  f.summary = v.s.comm_of(a.pid) + " (pid " + std::to_string(a.pid) + ", thread " + std::to_string(tid) + ") waited " +
              format_duration_ns(a.off_ns) + " for data between CUDA calls" +
              (thread_share > 0 ? " (" + pct(thread_share) + " of its time)" : std::string()) + " in " +
              std::to_string(a.calls) + " waits, each ended by its data workers " + names + "; the DataLoader cannot keep up: " +
              (pool.what == WorkerDoing::unknown ? std::string("the workers' own time is not in the trace")
                                                 : "the workers spent " + doing_text(all, pool));
  if (!rank.empty()) {
    const Worker& top = *rank.front().w;
    const Doing d = doing_of(top);
    std::vector<DataWorkerShare> workers;
    for (const Ranked& r : rank)
      workers.push_back({r.pid, v.s.comm_of(r.pid),
                         std::round(static_cast<double>(r.w->waited_ns) / std::max<double>(1, all.waited_ns) * 1000) / 1000,
                         doing_key(doing_of(*r.w).what)});
    f.culprit = Culprit{.pid = rank.front().pid,
                        .comm = v.s.comm_of(rank.front().pid),
                        .share_kind = ShareKind::wait,
                        .share = std::round(static_cast<double>(top.waited_ns) / std::max<double>(1, all.waited_ns) * 1000) / 1000,
                        .doing = doing_key(d.what),
                        .doing_share = std::round(d.share * 1000) / 1000,
                        .workers = std::move(workers)};
    if (top.io_requests > 0) f.culprit->io_bytes = top.io_bytes;
  }
  f.evidence.push_back("asleep between calls for " + format_duration_ns(a.off_ns) + " until a data worker " +
                       (e.relayed_ns > 0 ? "(or the relay thread " + v.s.thread_name(e.relay_tid) + " passing its batch on, " +
                                               format_duration_ns(e.relayed_ns) + ") "
                                         : std::string()) +
                       "woke the thread; nothing else kept it from the GPU");
  for (size_t i = 0; i < rank.size() && i < 4; ++i) {
    const Worker& w = *rank[i].w;
    f.evidence.push_back(who(v.s, rank[i].pid) + ": the thread waited " + format_duration_ns(w.waited_ns) + " for it (" +
                         std::to_string(w.waits) + " waits); it spent " + doing_text(w, doing_of(w)) +
                         (w.io_requests > 0 && doing_of(w).what != WorkerDoing::block_io ? "; " + io_text(w) : std::string()));
  }
  if (const auto* p = argmax_by(all.preempted_by_pid, [](const auto& e) { return e.second; })) {
    f.evidence.push_back("while runnable the workers' CPU went to " + who(v.s, p->first) + " (" + format_duration_ns(p->second) +
                         ")");
  }
  if (std::string g = gpu_idle_line(v); !g.empty()) f.evidence.push_back(g);
  f.calls_line = false;
  return f;
}

std::string DataLoaderStarvation::fix(const ChainView&, const Evidence& e) {
  const Worker all = pooled(e);
  switch (doing_of(all).what) {
    case WorkerDoing::block_io:
      return "The DataLoader workers are bound by disk reads: raise num_workers and prefetch_factor so more reads are "
             "in flight, read larger contiguous chunks (sharded/packed formats such as WebDataset or a single memory-mapped "
             "file instead of many small files), or stage the dataset on local NVMe / in the page cache before training.";
    case WorkerDoing::cpu:
      return "The DataLoader workers are bound by CPU work (decoding, augmentation): raise num_workers up to the free "
             "cores, move decoding/augmentation to the GPU (NVIDIA DALI, torchvision.io.decode_jpeg on device), or "
             "preprocess the dataset once offline.";
    case WorkerDoing::runnable:
      return "The DataLoader workers are starved of CPU: give them cores (fewer competing processes, taskset/cpuset for the "
             "job, or fewer workers than cores) so batches are ready before the GPU needs them.";
    default:
      return "The training loop waits for its DataLoader: raise num_workers and prefetch_factor, use pin_memory=True with "
             "persistent_workers=True, and profile what one worker does per batch.";
  }
}

void DataLoaderStarvation::detect(ChunkContext& cx, const Slow& w, const std::vector<WorkerWait>& waits) {
  const Ev& e = *w.e;
  auto [c, ev] = chain_for<DataLoaderStarvation>(cx.s, e.pid, e.op, w.gap);
  int64_t waited = 0;
  for (const WorkerWait& ww : waits) waited += ww.ns;
  note_call(cx.s, c, w, w.excess, waited);
  auto items = call_frame(cx.s, w);
  for (const WorkerWait& ww : waits) {
    Worker& k = ev.workers[ww.worker_pid];
    ++k.waits;
    k.waited_ns += ww.ns;
    add_party(c.culprits, ww.worker_pid, 0, ww.ns);
    if (ww.relay_tid) {
      ev.relayed_ns += ww.ns;
      ev.relay_tid = ww.relay_tid;
    }
    // The worker's time producing this batch: since its previous delivery (the wait alone
    // would see only the tail of the work, e.g. the decode after a long read), at most
    // kMaxBatchWindowNs back.
    auto [last, first_delivery] = ev.last_delivery_ns.try_emplace(ww.worker_pid, ww.from_ns);
    const int64_t from = std::clamp(std::min(last->second, ww.from_ns), ww.wake_ns - kMaxBatchWindowNs, ww.wake_ns);
    last->second = ww.wake_ns;
    const WorkerActivity act = worker_activity(cx.s, cx.tl, ww.worker_pid, from, ww.wake_ns);
    if (act.seen) {
      k.seen = true;
      k.on_cpu_ns += act.on_cpu_ns;
      k.io_wait_ns += act.io_wait_ns;
      k.runnable_ns += act.runnable_ns;
      k.sleep_ns += act.sleep_ns;
      if (act.runnable_ns > 0) {
        std::vector<RunShare> ran;
        runnable_culprits(cx.tl, act.tid, from, ww.wake_ns, ran, nullptr, nullptr);
        for (const RunShare& r : ran)
          if (r.pid != ww.worker_pid) k.preempted_by_pid[r.pid] += r.ns;
      }
    }
    for_overlapping(cx.hx.blocks, cx.hx.max_block_dur, from, ww.wake_ns, [&](const Ev& b) {
      if (b.pid != ww.worker_pid) return;
      ++k.io_requests;
      const BlockArgs io = block_args(b);
      k.io_bytes += io.bytes;
      k.io_bytes_by_dev[io.dev] += io.bytes;
    });
    items.push_back({ww.wake_ns, "host",
                     who(cx.s, ww.worker_pid) + (ww.relay_tid ? " hands a batch to " + cx.s.thread_name(ww.relay_tid) +
                                                                     " (tid " + std::to_string(ww.relay_tid) + "), which wakes the thread"
                                                               : " wakes thread " + std::to_string(e.tid)) +
                         " after " + format_duration_ns(ww.wake_ns - ww.from_ns) +
                         (act.seen ? "; producing that batch the worker was in D " + format_duration_ns(act.io_wait_ns) + ", on-CPU " +
                                         format_duration_ns(act.on_cpu_ns) + ", runnable " + format_duration_ns(act.runnable_ns)
                                   : std::string())});
  }
  add_sample(c, w.excess, std::move(items));
}

}  // namespace causeway
