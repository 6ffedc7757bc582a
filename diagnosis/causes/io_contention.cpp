#include "diagnosis/causes/io_contention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "common/units.h"
#include "tracedb/op_args.h"

namespace causeway {
namespace {

// The other process with I/O in flight during at least 30% of the waits, else null (own I/O).
const PartyAcc* other_io(const ChainAcc& a) {
  const PartyAcc* p = top_party(a.culprits, a.pid, true);
  return p && p->hits * 10 >= a.calls * 3 ? p : nullptr;
}

}  // namespace

Finding IoContention::explain(const ChainView& v, const Evidence& e) {
  const ChainAcc& a = v.a;
  Finding f;
  const PartyAcc* other = other_io(a);
  const PartyAcc* p = other ? other : top_party(a.culprits, UINT32_MAX, true);
  double share = p ? static_cast<double>(p->hits) / static_cast<double>(a.calls) : 0;
  if (other)
    f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + " waiting in D state (disk I/O) " +
                v.where + "; " + who(v.s, p->pid) + " had block I/O in flight on the same disk during " + pct(share) +
                " of the waits";
  else if (2 * e.issued_calls > a.calls)
    f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + " to the process's own disk reads " +
                v.where + ": its thread issued the block requests itself inside the calls (page faults on a file-backed or "
                "swapped-out source, or a read)";
  else
    f.summary = v.victim + ": " + std::to_string(a.calls) + " slow calls lost " + v.lost + " waiting in D state " + v.where +
                " for the process's own disk I/O (writes/fsync or page faults)";
  if (p)
    f.culprit = Culprit{.pid = p->pid, .comm = v.s.comm_of(p->pid), .share_kind = ShareKind::overlap,
                        .share = std::round(share * 1000) / 1000, .own_io = other == nullptr};
  f.evidence.push_back("uninterruptible (D) for " + format_duration_ns(a.off_ns) + " " + v.where + ", " + pct(v.cause_share) +
                       " of the time lost");
  if (e.issued_calls > 0)
    f.evidence.push_back(std::to_string(e.issued_calls) + " of the slow calls issued block requests from their own thread inside " +
                         "the call, and spent " + format_duration_ns(e.issued_on_cpu_ns) +
                         " on-CPU in them (the fault or read path: host work, not a GPU wait)");
  f.evidence.push_back("block requests overlapping the waits: " + std::to_string(e.own_requests) +
                       " on the process's behalf (" + std::to_string(e.kworker_requests) + " of them issued by kernel workers, " +
                       format_bytes(e.own_bytes) + "), " + std::to_string(e.other_requests) + " from other processes");
  if (other)
    for (auto& [k, q] : a.culprits)
      if (q.pid != a.pid && q.pid != other->pid && q.hits * 10 >= a.calls)
        f.evidence.push_back(who(v.s, q.pid) + " also had I/O in flight during " + std::to_string(q.hits) + " waits");
  return f;
}

std::string IoContention::fix(const ChainView& v, const Evidence&) {
  if (const PartyAcc* p = other_io(v.a))
    return "Keep " + v.s.comm_of(p->pid) +
           " off the disk the job reads while it trains (ionice -c3, reschedule it, or exclude the dataset path), or stage "
           "the dataset on local NVMe / in RAM so page faults do not queue behind it.";
  return "Move the writes and fsync off the thread that drives the GPU (a background writer thread or async I/O), "
         "or batch them (fewer fsync calls), so the GPU queue keeps getting work.";
}

namespace {

// The call's timeline: entered/returned, its D waits, and the first block requests involved.
void add_io_sample(ChunkContext& cx, ChainAcc& c, const Slow& w, const std::vector<const OffCpuInterval*>& dws,
                   std::vector<const Ev*> reqs) {
  const Ev& e = *w.e;
  auto items = call_frame(cx.s, w);
  for (const OffCpuInterval* iv : dws)
    items.push_back({iv->from_ns, "host", "thread " + std::to_string(e.tid) + " blocks in D state (uninterruptible) for " +
                                              format_duration_ns(iv->runnable_from() - iv->from_ns)});
  std::sort(reqs.begin(), reqs.end(), [](const Ev* x, const Ev* y) { return x->ts < y->ts; });
  size_t shown = 0;
  for (const Ev* r : reqs) {
    if (++shown > 6) break;
    const BlockArgs b = block_args(*r);
    items.push_back({r->ts, "io", "block request " + format_bytes(b.bytes) + " on dev " + std::to_string(b.dev_major()) +
                                      ":" + std::to_string(b.dev_minor()) + " issued by " + cx.s.comm_of(r->pid) +
                                      " (pid " + std::to_string(r->pid) + ", thread " + std::to_string(r->tid) + "), " +
                                      format_duration_ns(r->dur)});
  }
  add_sample(c, w.excess, std::move(items));
}

}  // namespace

bool IoContention::detect(ChunkContext& cx, const Slow& w) {
  const Ev& e = *w.e;
  // D state: I/O or reclaim. Block requests overlapping the thread's D intervals, by any
  // issuer: reads for a fault or readahead are often issued by a kernel worker.
  std::map<uint32_t, std::pair<int64_t, int64_t>> io;  // pid -> (requests, bytes)
  std::vector<const Ev*> reqs;
  std::vector<const OffCpuInterval*> dws;
  for (const OffCpuInterval& iv : cx.tl.overlapping(e.tid, w.from, w.to)) {
    if (iv.state != OffCpuState::uninterruptible) continue;
    dws.push_back(&iv);
    int64_t a = std::max(iv.from_ns, w.from), b = std::min(iv.runnable_from(), w.to);
    for_overlapping(cx.hx.blocks, cx.hx.max_block_dur, a, b, [&](const Ev& r) {
      auto& x = io[r.pid];
      ++x.first;
      x.second += block_args(r).bytes;
      if (std::find(reqs.begin(), reqs.end(), &r) == reqs.end()) reqs.push_back(&r);
    });
  }
  if (io.empty()) return false;
  auto [c, ev] = chain_for<IoContention>(cx.s, e.pid, e.op, w.gap);
  note_call(cx.s, c, w, w.excess, w.off.uninterruptible_ns);
  int64_t own_reqs = 0, own_bytes = 0;
  bool other = false;
  for (auto& [pid, x] : io) {
    if (pid == e.pid || cx.s.is_kernel_thread(pid)) {
      own_reqs += x.first;
      own_bytes += x.second;
      if (pid != e.pid) ev.kworker_requests += x.first;
      continue;
    }
    other = true;
    add_party(c.culprits, pid, 0, 0, x.second);
    ev.other_requests += x.first;
  }
  ev.own_requests += own_reqs;
  ev.own_bytes += own_bytes;
  if (!other) add_party(c.culprits, e.pid, 0, w.off.uninterruptible_ns, own_bytes);
  add_io_sample(cx, c, w, dws, std::move(reqs));
  return true;
}

bool IoContention::detect_issued(ChunkContext& cx, const Slow& w) {
  const Ev& e = *w.e;
  // Requests its own thread issued after the call began: the call itself went to the disk.
  std::vector<const Ev*> reqs;
  int64_t bytes = 0;
  for_overlapping(cx.hx.blocks, cx.hx.max_block_dur, w.from, w.to, [&](const Ev& r) {
    if (r.tid != e.tid || r.pid != e.pid || r.ts < w.from) return;
    reqs.push_back(&r);
    bytes += block_args(r).bytes;
  });
  if (reqs.empty()) return false;
  auto [c, ev] = chain_for<IoContention>(cx.s, e.pid, e.op, w.gap);
  note_call(cx.s, c, w, w.excess, w.off.uninterruptible_ns);
  ev.own_requests += static_cast<int64_t>(reqs.size());
  ev.own_bytes += bytes;
  ++ev.issued_calls;
  ev.issued_on_cpu_ns += std::max<int64_t>(0, (w.to - w.from) - w.off.total());
  add_party(c.culprits, e.pid, 0, w.excess, bytes);
  std::vector<const OffCpuInterval*> dws;
  for (const OffCpuInterval& iv : cx.tl.overlapping(e.tid, w.from, w.to))
    if (iv.state == OffCpuState::uninterruptible) dws.push_back(&iv);
  add_io_sample(cx, c, w, dws, std::move(reqs));
  return true;
}

}  // namespace causeway
