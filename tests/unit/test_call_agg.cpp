// Fast calls counted in the kernel (bpf/calls.bpf.h "Aggregated calls"): the kernel's histogram
// buckets are the trace DB's, per-CPU values merge exactly, reads turn into deltas, and the
// percentiles from the merged histogram stay within the documented bucket error
// (collector/call_agg.h, docs/COLLECTOR.md "Aggregated calls").
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "collector/call_agg.h"
#include "collector/live_stats.h"
#include "collector/stack_policy.h"
#include "diagnosis/thread_run.h"
#include "tracedb/histogram.h"

namespace causeway::collector {

TEST_CASE("the kernel's bucket of a duration is the trace DB histogram's, up to the aggregation cap") {
  for (uint64_t v = 0; v < 4096; ++v) REQUIRE(cw_agg_bucket(v) == LatencyHistogram::bucket_of(v));
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t v = rng() % CW_AGG_MAX_NS;
    REQUIRE(cw_agg_bucket(v) == LatencyHistogram::bucket_of(v));
  }
  // Every power of two and its neighbours (the octave edges).
  for (int k = 7; k < 20; ++k)
    for (uint64_t v : {(uint64_t{1} << k) - 1, uint64_t{1} << k, (uint64_t{1} << k) + 1})
      CHECK(cw_agg_bucket(v) == LatencyHistogram::bucket_of(v));
  CHECK(cw_agg_bucket(CW_AGG_MAX_NS - 1) == CW_AGG_BUCKETS - 1);
  CHECK(LatencyHistogram::bucket_of(CW_AGG_MAX_NS - 1) == CW_AGG_BUCKETS - 1);
}

namespace {
cw_agg_value agg_of(std::initializer_list<uint64_t> durs, uint64_t start) {
  cw_agg_value v{};
  for (uint64_t d : durs) {
    if (v.count == 0 || d < v.min_ns) v.min_ns = d;
    if (v.count == 0) v.first_ns = start;
    v.max_ns = std::max<uint64_t>(v.max_ns, d);
    ++v.count;
    v.sum_ns += d;
    v.last_ns = start;
    ++v.hist[cw_agg_bucket(d)];
    start += 1000;
  }
  return v;
}
}  // namespace

TEST_CASE("per-CPU values merge into one: counts and sums add, extremes and times bound") {
  std::vector<cw_agg_value> cpus(3);
  cpus[0] = agg_of({1500, 2000, 2500}, 10'000);
  // cpus[1]: this key never ran there (all zero): it must not pull min or first to 0.
  cpus[2] = agg_of({900, 40'000}, 5'000);
  cpus[2].errors = 1;
  const CallAggTotals t = merge_percpu(cpus);
  CHECK(t.count == 5);
  CHECK(t.sum_ns == 1500 + 2000 + 2500 + 900 + 40'000);
  CHECK(t.errors == 1);
  CHECK(t.min_ns == 900);
  CHECK(t.max_ns == 40'000);
  CHECK(t.first_ns == 5'000);
  CHECK(t.last_ns == 12'000);
  uint64_t in_hist = 0;
  for (uint64_t n : t.hist) in_hist += n;
  CHECK(in_hist == 5);
  CHECK(t.hist[LatencyHistogram::bucket_of(40'000)] == 1);
}

TEST_CASE("a key counted in both the array and the hash sums to the calls of both") {
  // The array entry's CPUs, then the hash's for the same (process, op), as the reader adds them.
  std::vector<cw_agg_value> array_cpus(2), hash_cpus(2);
  array_cpus[1] = agg_of({3000, 3100}, 20'000);
  hash_cpus[0] = agg_of({700}, 30'000);
  CallAggTotals t;
  add_percpu(t, array_cpus);
  add_percpu(t, hash_cpus);
  CHECK(t.count == 3);
  CHECK(t.sum_ns == 3000 + 3100 + 700);
  CHECK(t.min_ns == 700);
  CHECK(t.max_ns == 3100);
  CHECK(t.first_ns == 20'000);
  CHECK(t.last_ns == 30'000);
  CHECK(t.hist.size() == CW_AGG_BUCKETS);
  CHECK(t.hist[LatencyHistogram::bucket_of(3000)] == 1);
  CHECK(t.hist[LatencyHistogram::bucket_of(700)] == 1);
  // Nothing counted anywhere: no count, an empty-but-sized histogram.
  CallAggTotals none;
  add_percpu(none, std::vector<cw_agg_value>(2));
  CHECK(none.count == 0);
  CHECK(none.hist.size() == CW_AGG_BUCKETS);
}

TEST_CASE("a read turns into what was counted since the previous one") {
  std::vector<cw_agg_value> one{agg_of({1000, 1000, 3000}, 100)};
  const CallAggTotals first = merge_percpu(one);
  AggregatedCallsRecord r = aggregate_delta(first, nullptr, 42, 112);
  CHECK(r.pid == 42);
  CHECK(r.op == 112);
  CHECK(r.count == 3);
  CHECK(r.sum_ns == 5000);
  CHECK(r.min_ns == 1000);
  CHECK(r.max_ns == 3000);
  CHECK(r.ts_ns == 2100);

  // Two more calls on the same CPU: only they come out, with their own extremes (the running
  // min 1000 is not theirs: the new calls' lowest bucket bounds it).
  cw_agg_value more = one[0];
  for (uint64_t d : {7000ull, 9000ull}) {
    ++more.count;
    more.sum_ns += d;
    more.max_ns = std::max<uint64_t>(more.max_ns, d);
    ++more.hist[cw_agg_bucket(d)];
    more.last_ns = 9999;
  }
  const CallAggTotals second = merge_percpu(std::vector<cw_agg_value>{more});
  r = aggregate_delta(second, &first, 42, 112);
  CHECK(r.count == 2);
  CHECK(r.sum_ns == 16'000);
  CHECK(r.min_ns == LatencyHistogram::bucket_low(LatencyHistogram::bucket_of(7000)));
  CHECK(r.max_ns == 9000);
  CHECK(r.ts_ns == 9999);
  REQUIRE(r.hist.size() == 2);
  // Nothing new: nothing out.
  CHECK(aggregate_delta(second, &second, 42, 112).count == 0);
}

TEST_CASE("percentiles from the counted histogram are within the bucket error of the exact ones") {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(std::log(2500.0), 0.6);
  std::vector<uint64_t> durs;
  cw_agg_value v{};
  for (int i = 0; i < 50000; ++i) {
    const uint64_t d = std::min<uint64_t>(CW_AGG_MAX_NS - 1, static_cast<uint64_t>(dist(rng)));
    durs.push_back(d);
    if (v.count == 0 || d < v.min_ns) v.min_ns = d;
    v.max_ns = std::max<uint64_t>(v.max_ns, d);
    ++v.count;
    v.sum_ns += d;
    ++v.hist[cw_agg_bucket(d)];
  }
  std::sort(durs.begin(), durs.end());
  LiveStats stats;
  stats.add_counted(aggregate_delta(merge_percpu(std::vector<cw_agg_value>{v}), nullptr, 1, 112));
  const auto& s = stats.ops().at(112);
  CHECK(s.count == 50000);
  CHECK(stats.calls() == 50000);
  for (double q : {0.5, 0.95, 0.99}) {
    CAPTURE(q);
    const uint64_t exact = durs[static_cast<size_t>(std::ceil(q * double(durs.size()))) - 1];
    const uint64_t est = s.hist.percentile(q, s.min, s.max);
    // Half a bucket: 1/256 of the value (tracedb/histogram.h), the error stats states.
    CHECK(std::fabs(double(est) - double(exact)) <= double(exact) / 256.0 + 1.0);
  }
}

TEST_CASE("counted calls feed the stack thresholds like the same calls one by one") {
  StackPolicy one_by_one, counted;
  for (int i = 0; i < 1000; ++i) one_by_one.observe(1, 112, 200'000);
  for (int i = 0; i < 50; ++i) one_by_one.observe(1, 112, 900'000);
  counted.observe(1, 112, 200'000, 1000);
  counted.observe(1, 112, 900'000, 50);
  // p50 200 µs: a threshold above the 50 µs floor, so one is written.
  const auto a = one_by_one.updates(), b = counted.updates();
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  CHECK(a[0].threshold_ns == b[0].threshold_ns);
}

}  // namespace causeway::collector

// The correlator's side: a thread's run (a calls_aggregated row) counts as the launches it stands
// for in the thread's activity (launch-bound, host-bound) and in the op's baseline.
namespace causeway {
TEST_CASE("a run of counted launches adds its launches, their time and the gaps between them") {
  Ev run;
  run.ts = 1'000'000;
  run.dur = 1'000'000;  // first start .. last return
  run.pid = 7;
  run.tid = 8;
  run.op = CW_OP_CALLS_AGGREGATED;
  run.a[0] = 100;      // calls
  run.a[1] = 300'000;  // their total duration
  run.a[2] = CW_OP_CUDA_LAUNCH_KERNEL;
  ThreadActivity a;
  add_counted_run(a, run, 990'000, nullptr);  // the previous call returned 10 µs before the run
  CHECK(a.calls == 100);
  CHECK(a.launches == 100);
  CHECK(a.submits == 100);
  CHECK(a.launch_cpu_ns == 300'000);
  CHECK(a.gap_ns == 1'010'000 - 300'000);
  CHECK(a.gap_cpu_ns == a.gap_ns);  // no timeline: on-CPU
  CHECK(a.long_gaps == 0);
  CHECK(a.first_ns == 1'000'000);
  CHECK(a.last_end_ns == 2'000'000);

  uint64_t count = 0, min = UINT64_MAX, max = 0;
  LatencyHistogram hist;
  add_counted_run_to_baseline(run, count, hist, min, max);
  CHECK(count == 100);
  CHECK(hist.total() == 100);
  CHECK(min == 3000);
  CHECK(max == 3000);
}

// Both stores of the same calls split the thread's time alike (docs/COLLECTOR.md "Aggregated
// calls"): three launches between two syncs, the thread switched out for 7 µs in the 10 µs gap
// before the third (none inside a launch: the kernel records such a launch as a row). As rows or
// as one run, the launches, their time, the gaps and their on-CPU part, and the submits the
// second sync counts since the first, are the same.
TEST_CASE("launches as rows or as a counted run give the thread the same time split and submits") {
  constexpr uint32_t tid = 8, pid = 7;
  auto call = [&](int64_t ts, int64_t dur, uint16_t op) {
    Ev e;
    e.ts = ts;
    e.dur = dur;
    e.pid = pid;
    e.tid = tid;
    e.op = op;
    return e;
  };
  ThreadTimelines tl;
  std::vector<SchedRow> sched = {{.ts_ns = 18'000, .cpu = 0, .prev_tid = tid, .prev_pid = pid, .prev_state = 0, .next_tid = 99, .next_pid = 99},
                                 {.ts_ns = 25'000, .cpu = 0, .prev_tid = 99, .prev_pid = 99, .prev_state = 0, .next_tid = tid, .next_pid = pid}};
  tl.build(sched, {}, 100'000);
  const Ev sync0 = call(0, 10'000, CW_OP_CUDA_STREAM_SYNC), sync1 = call(30'000, 10'000, CW_OP_CUDA_STREAM_SYNC);
  const std::vector<Ev> launches = {call(12'000, 2'000, CW_OP_CUDA_LAUNCH_KERNEL), call(15'000, 2'000, CW_OP_CUDA_LAUNCH_KERNEL),
                                    call(27'000, 2'000, CW_OP_CUDA_LAUNCH_KERNEL)};
  auto add_row = [&](ThreadActivity& a, const Ev& e, int64_t prev_end) {
    a.add_call(e, prev_end, tl.off_cpu_in(tid, e.ts, e.end()), &tl);
  };

  ThreadActivity rows;
  add_row(rows, sync0, INT64_MIN);
  int64_t prev_end = sync0.end();
  for (const Ev& l : launches) {
    add_row(rows, l, prev_end);
    prev_end = l.end();
  }
  add_row(rows, sync1, prev_end);

  ThreadActivity counted;
  add_row(counted, sync0, INT64_MIN);
  Ev run = call(12'000, 29'000 - 12'000, CW_OP_CALLS_AGGREGATED);
  run.a[0] = 3;
  run.a[1] = 6'000;
  run.a[2] = CW_OP_CUDA_LAUNCH_KERNEL;
  add_counted_run(counted, run, sync0.end(), &tl);
  add_row(counted, sync1, run.end());

  for (const ThreadActivity* a : {&rows, &counted}) {
    CHECK(a->calls == 5);
    CHECK(a->launches == 3);
    CHECK(a->launch_cpu_ns == 6'000);
    CHECK(a->gap_ns == 2'000 + 1'000 + 10'000 + 1'000);
    CHECK(a->gap_cpu_ns == 14'000 - 7'000);  // the short gap's switch is off-CPU either way
    CHECK(a->submits_before_wait == 3);
    CHECK(a->submits_since_wait == 0);
    CHECK(a->longest_gap_cpu_ns == 0);  // no gap of 1 ms or more
  }
}
}  // namespace causeway
