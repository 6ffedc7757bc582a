// Multi-rank scenarios: a straggling rank, and a collective slowed by the network.
#include <algorithm>
#include <array>
#include <vector>

#include "bpf/events.h"
#include "synth/scenario.h"
#include "synth/trainer.h"

namespace causeway::synth {
namespace {

constexpr int64_t kCommHash = 0x5ca1ab1e0ddba11LL;
constexpr int64_t kFloat32 = 7;  // ncclFloat32
constexpr int64_t kSum = 0;      // ncclSum

struct Rank {
  uint32_t pid;
  int32_t cpu;
  int64_t t;        // where this rank's host timeline is
  int64_t entered;  // when it entered the current collective
  uint64_t st_allreduce, st_sync;
};

void init_ranks(ScenarioContext& c, std::vector<Rank>& ranks, int64_t nranks, int64_t comm_hash) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    Rank& k = ranks[r];
    c.b.process(k.pid, 6000, "python3",
                "python3 -u train_ddp.py --local_rank=" + std::to_string(r) + " --nproc_per_node=" +
                    std::to_string(ranks.size()),
                "/usr/bin/python3.11", c.t0, c.t0 + c.duration, 0x4000 + r, "");
    k.st_allreduce = c.b.stack({"libnccl.so.2!ncclAllReduce+0x4", "libtorch_cuda.so!c10d::ProcessGroupNCCL::allreduce+0x2f1",
                                "libtorch_python.so!c10d::ProcessGroup::allreduce+0x88",
                                "torch/nn/parallel/distributed.py:1140 (_sync_gradients)"});
    k.st_sync = c.b.stack({"libcudart.so.13!cudaStreamSynchronize+0x4", "libtorch_cuda.so!c10::cuda::stream_synchronize+0x3a",
                           "libtorch_python.so!THCPStream_synchronize+0x5e", "train_ddp.py:88 (loss.item())"});
    int64_t init = c.rng.around(850 * kMs, 0.05);
    c.b.call(k.pid, k.pid, CW_OP_NCCL_COMM_INIT_RANK, c.t0 + 2 * kMs, init,
             {0, comm_hash, static_cast<int64_t>(r), nranks}, 0, 0, k.cpu);
    k.t = c.t0 + 2 * kMs + init + 5 * kMs;
  }
}

// One data-parallel step on every rank: launches, allreduce (host enqueue), then a sync that
// returns when the collective completes, i.e. after the last rank entered plus wire time.
// `late` delays a rank's entry; `extra_wire` stretches the collective itself.
template <typename Late>
int64_t ddp_step(ScenarioContext& c, std::vector<Rank>& ranks, int64_t seq, int64_t comm_hash, int64_t nranks,
                 Late late, int64_t extra_wire) {
  int64_t last_entry = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    Rank& k = ranks[r];
    int64_t t = k.t;
    for (int i = 0; i < 12; ++i) {  // forward/backward launches
      int64_t d = c.rng.around(5 * kUs);
      c.b.call(k.pid, k.pid, CW_OP_CUDA_LAUNCH_KERNEL, t, d,
               {0, 0x7f3a40001000 + i * 0x140, 0, 0x55d0c0de, pack_dim3(512, 1, 1), pack_dim3(256, 1, 1)}, 0, 0, k.cpu);
      t += d + c.rng.around(30 * kUs);
    }
    t += late(r, t);
    k.entered = t;
    last_entry = std::max(last_entry, t);
    int64_t d = c.rng.around(28 * kUs);
    c.b.call(k.pid, k.pid, CW_OP_NCCL_ALL_REDUCE, t, d,
             {25 << 20, comm_hash, static_cast<int64_t>(r), nranks, seq, kFloat32 | (kSum << 8)}, 0, k.st_allreduce,
             k.cpu);
    k.t = t + d + c.rng.around(15 * kUs);
  }
  int64_t done = last_entry + c.rng.around(4 * kMs, 0.05) + extra_wire;  // ring allreduce of 100 MB
  int64_t next = 0;
  for (Rank& k : ranks) {
    int64_t sync_end = std::max(done, k.t + 5 * kUs) + 3 * kUs;
    c.b.call(k.pid, k.pid, CW_OP_CUDA_STREAM_SYNC, k.t, sync_end - k.t, {0, 0, 0, 0x55d0c0de}, 0, k.st_sync, k.cpu);
    k.t = sync_end + c.rng.around(350 * kUs);
    next = std::max(next, k.t);
  }
  return next;
}

}  // namespace

// Four ranks; rank 2 enters every allreduce 6–25 ms late. In about a third of the steps its
// thread was preempted by `rsync` on its CPU just before (those late entries are rsync's
// cpu_contention, rank 2 its victim: docs/DIAGNOSIS.md "Arbitration"); otherwise its own
// input pipeline (on-CPU) is slow (nccl_straggler). Ranks 0, 1 and 3 wait for it inside
// cudaStreamSynchronize.
void scenario_nccl_straggler(ScenarioContext& c) {
  constexpr uint32_t kRsyncPid = 8100;
  std::vector<Rank> ranks = {{6001, 0, 0, 0, 0, 0}, {6002, 1, 0, 0, 0, 0}, {6003, 2, 0, 0, 0, 0}, {6004, 3, 0, 0, 0, 0}};
  init_ranks(c, ranks, 4, kCommHash);
  c.b.process(kRsyncPid, 1, "rsync", "rsync -a /data/shards/ backup:/shards/", "/usr/bin/rsync", c.t0, c.t0 + c.duration);
  const int64_t end = c.t0 + c.duration;
  for (int64_t seq = 1; !c.stopped(); ++seq) {
    int64_t t = ddp_step(
        c, ranks, seq, kCommHash, 4,
        [&](size_t r, int64_t at) -> int64_t {
          if (r != 2) return 0;
          int64_t delay = c.rng.uniform_ns(6 * kMs, 25 * kMs);
          if (c.rng.chance(0.3)) c.b.preempt(6003, 6003, 2, at + 20 * kUs, at + delay - 30 * kUs, kRsyncPid, kRsyncPid);
          return delay;
        },
        0);
    if (t >= end) break;
    for (Rank& k : ranks) k.t = t;
  }
}

// Two local ranks of a two-node job over TCP sockets (no InfiniBand). During bursts of
// TCP retransmits to the peer node, every allreduce finishes 10–60 ms late on both ranks.
void scenario_network(ScenarioContext& c) {
  std::vector<Rank> ranks = {{6101, 0, 0, 0, 0, 0}, {6102, 1, 0, 0, 0, 0}};
  constexpr int64_t kComm = 0x7e1e9a7e5eed01LL;
  init_ranks(c, ranks, 4, kComm);
  const int64_t end = c.t0 + c.duration;
  const int64_t kLocal = (10ll << 24) | (3 << 8) | 11;   // 10.0.3.11
  const int64_t kPeer = (10ll << 24) | (3 << 8) | 12;    // 10.0.3.12
  for (int64_t seq = 1; !c.stopped(); ++seq) {
    int64_t now = ranks[0].t;
    bool lossy = (now - c.t0) % (20 * kSec) >= 12 * kSec && (now - c.t0) % (20 * kSec) < 17 * kSec;
    int64_t extra = 0;
    if (lossy && c.rng.chance(0.6)) {
      extra = c.rng.uniform_ns(10 * kMs, 60 * kMs);
      int n = 1 + static_cast<int>(c.rng.uniform(0, 4));
      for (int i = 0; i < n; ++i) {
        const Rank& k = ranks[static_cast<size_t>(i) % ranks.size()];
        c.b.host_event(k.pid, k.pid, CW_OP_TCP_RETRANSMIT, now + c.rng.uniform_ns(0, 8 * kMs), 0,
                       {kLocal, 41000 + i, kPeer, 43211, 1 /* TCP_ESTABLISHED */, 1 /* sock_owner */});
      }
    }
    int64_t t = ddp_step(c, ranks, seq, kComm, 4, [](size_t, int64_t) { return int64_t{0}; }, extra);
    if (t >= end) break;
    for (Rank& k : ranks) k.t = t;
  }
}

}  // namespace causeway::synth
