// The watermark rule (docs/DIAGNOSIS.md): a call is judged only once its host context is
// stored. Replays, through the real StoreWriter and a read-only connection polled like
// `causeway trace`'s chain watcher, the shape of a real trace that went wrong: a thread
// looping launch -> spinning cudaStreamSynchronize on one CPU while a hog pinned there
// preempts one sync in five, from 2 s in until the trace is stopped. Scheduler rows reach the
// DB a little after the calls (they come through their own ring), and the collector stores
// its host-context mark behind them. The live polls and the final pass must name every
// preempted sync cpu_contention; before the rule, each poll read the scheduler rows of a
// time range before they were committed and never again, so the calls there were judged
// with no preemption in sight — HIGH gpu_wait ("on-CPU, asleep 0 ns … the GPU queue itself is
// the bottleneck") for every call after the first poll.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "diagnosis/correlator.h"
#include "bpf/events.h"
#include "tests/support/test_support.h"
#include "tests/unit/diagnosis_live_session.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using causeway::test::Live;
using causeway::test::TempDir;

namespace {

constexpr int64_t kUs = 1'000, kMs = 1'000'000, kSec = 1'000'000'000;
constexpr uint32_t kW = 4100, kHog = 4101;

struct Incident {
  std::vector<CallRecord> calls;       // in end order (the order the calls ring delivers them)
  std::vector<SwitchRecord> switches;  // in ts order
  std::set<int64_t> preempted;         // start of every preempted sync
};

CallRecord call(uint16_t op, int64_t ts, int64_t dur) {
  CallRecord r;
  r.ts_ns = ts;
  r.dur_ns = dur;
  r.pid = kW;
  r.tid = kW;
  r.op = op;
  r.cpu = 1;
  return r;
}

SwitchRecord sw(int64_t ts, uint32_t prev, uint32_t next) { return SwitchRecord{ts, 1, prev, prev, 120, 0, next, next, 120}; }

// The shipped trace's shape, shortened: launch (80 µs) then a spinning sync (2 ms); from
// hog_from on, every fifth sync is switched out runnable 1.5 ms in and back 12 ms later.
Incident hog_incident(int64_t t0, int64_t hog_from, int64_t stop) {
  Incident in;
  int64_t t = t0 + kMs;
  for (int i = 0; t + 20 * kMs < stop; ++i) {
    in.calls.push_back(call(CW_OP_CUDA_LAUNCH_KERNEL, t, 80 * kUs));
    const int64_t sync = t + 100 * kUs;
    const bool hit = sync >= hog_from && i % 5 == 0;
    const int64_t dur = hit ? 14 * kMs : 2 * kMs;
    in.calls.push_back(call(CW_OP_CUDA_STREAM_SYNC, sync, dur));
    if (hit) {
      in.switches.push_back(sw(sync + 1'500 * kUs, kW, kHog));
      in.switches.push_back(sw(sync + 13'500 * kUs, kHog, kW));
      in.preempted.insert(sync);
    }
    t = sync + dur + 50 * kUs;
  }
  return in;
}

struct Outcome {
  std::map<std::string, ChainRecord> chains;  // by id: the last version stored
  std::vector<CallCauseRecord> claims;
};

// Writes the incident as `causeway trace` does: every 100 ms the calls that returned, the
// scheduler rows host_lag older, and the host-context mark behind those; every 3 s a live
// poll. At `stop` the rest and the final mark, then the final pass.
Outcome replay_live(const std::string& path, Live& l, const Incident& in, int64_t stop, int64_t host_lag) {
  Outcome out;
  auto ro = open_read_only(path);
  REQUIRE(ro.ok());
  LiveCorrelator live(1, l.t0);
  auto take = [&](Result<std::vector<ChainRecord>> r) {
    REQUIRE_MESSAGE(r.ok(), r.error().message);
    for (ChainRecord& c : *r) out.chains[c.id] = std::move(c);
    for (CallCauseRecord& c : live.take_call_causes()) out.claims.push_back(std::move(c));
  };
  size_t next_call = 0, next_switch = 0;
  int64_t next_poll = l.t0 + 3 * kSec;
  for (int64_t now = l.t0 + 100 * kMs; now < stop; now += 100 * kMs) {
    for (; next_call < in.calls.size() && in.calls[next_call].ts_ns + in.calls[next_call].dur_ns <= now; ++next_call)
      l.w->push_wait(in.calls[next_call]);
    const int64_t host_to = now - host_lag;
    for (; next_switch < in.switches.size() && in.switches[next_switch].ts_ns < host_to; ++next_switch)
      l.w->push_wait(in.switches[next_switch]);
    l.w->push_meta(HostContextMark{host_to - 5 * kMs});
    if (now >= next_poll) {
      l.w->flush();
      take(live.poll(ro->get()));
      next_poll += 3 * kSec;
    }
  }
  for (; next_call < in.calls.size(); ++next_call) l.w->push_wait(in.calls[next_call]);
  for (; next_switch < in.switches.size(); ++next_switch) l.w->push_wait(in.switches[next_switch]);
  l.w->push_meta(HostContextMark{stop});
  l.w->flush();
  take(live.finish(ro->get()));
  return out;
}

std::string describe(const std::map<std::string, ChainRecord>& chains) {
  std::string s;
  for (const auto& [id, c] : chains) s += c.severity + " " + c.cause + " " + c.op + " calls " + std::to_string(c.calls) + "\n";
  return s;
}

void check_every_preemption_named(const Incident& in, const Outcome& o) {
  INFO(describe(o.chains));
  std::map<std::string, int> by_cause;
  std::set<int64_t> named;
  for (const CallCauseRecord& c : o.claims) {
    if (c.gap || c.op != CW_OP_CUDA_STREAM_SYNC) continue;
    ++by_cause[c.cause];
    if (c.cause == "cpu_contention") named.insert(c.ts_ns);
  }
  for (const auto& [cause, n] : by_cause) INFO(cause << ": " << n);
  CHECK(by_cause["gpu_wait"] == 0);
  CHECK(by_cause["unknown"] == 0);
  CHECK(named == in.preempted);  // every one, live and at stop
  bool cpu = false;
  for (const auto& [id, c] : o.chains) {
    if (c.pid != kW || c.severity != "HIGH") continue;
    CHECK(c.cause == "cpu_contention");  // and no other HIGH chain for the victim
    cpu = cpu || c.cause == "cpu_contention";
  }
  CHECK(cpu);
}

// A live session of the victim and the hog, written through the real StoreWriter.
struct HogSession {
  TempDir dir;
  std::string path = dir.file("w.db");
  Live l{path};
  HogSession() {
    l.proc(kW, "stall_incident");
    l.proc(kHog, "hogger");
  }
};

}  // namespace

TEST_CASE("watermark: an incident that lasts until the trace stops is cpu_contention live and at stop") {
  HogSession h;
  Live& l = h.l;
  const std::string& path = h.path;
  const int64_t stop = l.t0 + 14 * kSec;
  const Incident in = hog_incident(l.t0, l.t0 + 2 * kSec, stop);
  REQUIRE(in.preempted.size() > 300);
  // Scheduler rows 200 ms behind the calls: the host ring drained after the calls ring, then
  // the writer's next 100 ms batch.
  const Outcome o = replay_live(path, l, in, stop, 200 * kMs);
  check_every_preemption_named(in, o);
  REQUIRE(l.w->close(stop + kMs).ok());
}

TEST_CASE("watermark: scheduler rows a second late still reach every call") {
  HogSession h;
  Live& l = h.l;
  const std::string& path = h.path;
  const int64_t stop = l.t0 + 10 * kSec;
  const Incident in = hog_incident(l.t0, l.t0 + 2 * kSec, stop);
  const Outcome o = replay_live(path, l, in, stop, kSec);
  check_every_preemption_named(in, o);
  REQUIRE(l.w->close(stop + kMs).ok());
}

// A sync longer than the poll's lag that is still missing its host context when a poll comes:
// it waits for a later pass (the event_blocks zone map says which batch holds it) instead of
// being judged with no preemption in sight.
TEST_CASE("watermark: a long call whose context is not stored yet waits for it") {
  HogSession h;
  Live& l = h.l;
  const std::string& path = h.path;
  int64_t t = l.t0 + kMs;
  for (int i = 0; i < 3000; ++i, t += 2'100 * kUs) l.call(kW, kW, CW_OP_CUDA_STREAM_SYNC, t, 2 * kMs);
  l.w->flush();  // a batch of its own: the zone map tells it from the long call's
  // Preempted for 3.9 s of a 4 s sync; the switches are not stored yet.
  const int64_t long_ts = t;
  l.call(kW, kW, CW_OP_CUDA_STREAM_SYNC, long_ts, 4 * kSec);
  t += 4 * kSec + 100 * kUs;
  for (int i = 0; i < 3000; ++i, t += 2'100 * kUs) l.call(kW, kW, CW_OP_CUDA_STREAM_SYNC, t, 2 * kMs);
  l.w->push_meta(HostContextMark{long_ts + 50 * kMs});
  l.w->flush();
  auto ro = open_read_only(path);
  REQUIRE(ro.ok());
  LiveCorrelator live(1, l.t0, {}, kSec);
  auto first = live.poll(ro->get());
  REQUIRE(first.ok());
  for (const auto& c : live.take_call_causes()) CHECK(c.ts_ns != long_ts);  // not judged yet
  CHECK(live.correlator().analyzed_to() == long_ts);  // everything before it was judged
  // Its context arrives, then the mark passes it.
  l.sw(long_ts + 50 * kMs, kW, kW, 0, kHog, kHog);
  l.sw(long_ts + 3'950 * kMs, kHog, kHog, 0, kW, kW);
  l.w->push_meta(HostContextMark{t});
  l.w->flush();
  auto fin = live.finish(ro->get());
  REQUIRE(fin.ok());
  std::string cause;
  for (const auto& c : live.take_call_causes())
    if (c.ts_ns == long_ts && !c.gap) cause = c.cause;
  CHECK(cause == "cpu_contention");
  REQUIRE(l.w->close(t + kMs).ok());
}

// Without any mark (a writer that sets none) a running session's calls are not judged at all;
// once the session is stopped, everything is stored.
TEST_CASE("watermark: no mark, nothing judged until the session stops") {
  TempDir dir;
  const std::string path = dir.file("w.db");
  Live l(path);
  l.proc(kW, "stall_incident");
  int64_t t = l.t0 + kMs;
  for (int i = 0; i < 6000; ++i, t += 2'100 * kUs) l.call(kW, kW, CW_OP_CUDA_STREAM_SYNC, t, i % 50 == 7 ? 20 * kMs : 2 * kMs);
  l.w->flush();
  auto ro = open_read_only(path);
  REQUIRE(ro.ok());
  LiveCorrelator live(1, l.t0, {}, kSec);
  auto polled = live.poll(ro->get());
  REQUIRE(polled.ok());
  CHECK(polled->empty());
  CHECK(live.correlator().counters().calls == 0);
  REQUIRE(l.w->close(t + kMs).ok());
  auto fin = live.finish(ro->get());
  REQUIRE(fin.ok());
  CHECK(live.correlator().counters().calls == 6000);
}

// The writer stores the mark in the same transaction as the rows pushed before it, and the
// periodic counters never overwrite it with a later value.
TEST_CASE("watermark: the mark is committed with the rows it vouches for") {
  TempDir dir;
  const std::string path = dir.file("w.db");
  Live l(path);
  l.sw(l.t0 + kMs, kW, kW, 0, kHog, kHog);
  l.w->push_meta(HostContextMark{l.t0 + 2 * kMs});
  l.w->set_counter("dropped_ring", 0);
  l.w->flush();
  auto ro = open_read_only(path);
  REQUIRE(ro.ok());
  auto st = Statement::prepare(ro->get(),
                               "SELECT (SELECT value FROM collector_stats WHERE name = 'host_context_ns'), "
                               "(SELECT count(*) FROM sched WHERE ts_ns < (SELECT value FROM collector_stats WHERE name = "
                               "'host_context_ns'))");
  REQUIRE(st.ok());
  REQUIRE(st->step() == SQLITE_ROW);
  CHECK(st->col_int(0) == l.t0 + 2 * kMs);
  CHECK(st->col_int(1) == 1);
  REQUIRE(l.w->close(l.t0 + kSec).ok());
}
