// User stacks under `causeway trace` defaults: taken at return, only where they explain
// something (bpf/calls.bpf.h "User stacks", docs/COLLECTOR.md "Stacks"). One workload thread
// calls cudaStreamSynchronize from two call sites in turn (stream_sync, stream_sync_alt),
// back to back; every 100th iteration both calls spin 2 ms instead of returning at once.
#include <doctest/doctest.h>

#include <signal.h>

#include "bpf/events.h"
#include "tests/bpf/collector_harness.h"

namespace causeway::test {
namespace {

std::string S(int64_t v) { return std::to_string(v); }

}  // namespace

TEST_CASE("stacks: every slow call, the first call at each call site, and not the fast calls after it") {
  TempDir dir;
  Tracer t(dir, {"--lib", testprog("libcudart.so.13"), "--no-diagnose"});
  const int iters = 5000;
  pid_t pid = spawn({testprog("cw_workload"), "--iterations", S(iters), "--rate", "0", "--ops",
                     "stream_sync,stream_sync_alt", "--slow-every", "100", "--slow-us", "2000"},
                    dir.file("w.log"));
  REQUIRE(wait_exit(pid) == 0);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  const std::string db = t.db();
  INFO(t.log());
  const std::string calls = " FROM events WHERE pid = " + S(pid) + " AND op_id = " + S(CW_OP_CUDA_STREAM_SYNC);
  REQUIRE(q_int(db, "SELECT count(*)" + calls) == 2 * iters);
  CHECK(q_int(db, "SELECT value FROM collector_stats WHERE name = 'stack_failures'") == 0);

  // Slow: the 2 × 50 planted 2 ms calls (and any call a busy host stretched past 1 ms).
  const int64_t slow = q_int(db, "SELECT count(*)" + calls + " AND dur_ns >= 1000000");
  CHECK(slow >= 2 * iters / 100);
  CHECK(q_int(db, "SELECT count(*)" + calls + " AND dur_ns >= 1000000 AND stack_id IS NULL") == 0);

  // The first call from each site: the thread's first two calls, at different call sites
  // (innermost frame = the caller's return address, in cw_workload).
  auto first = q_rows(db, "SELECT stack_id IS NOT NULL, coalesce(stack_id, 0)" + calls + " ORDER BY ts_ns LIMIT 2");
  REQUIRE(first.size() == 2);
  CHECK(first[0][0] == 1);
  CHECK(first[1][0] == 1);
  CHECK(first[0][1] != first[1][1]);
  for (const auto& f : first) {
    const std::string frames = q_text(db, "SELECT frames FROM stacks WHERE id = " + S(f[1]));
    CAPTURE(frames);
    CHECK(frames.rfind("[\"cw_workload!", 0) == 0);
  }

  // Fast calls (< 50 µs, the floor) after those: no stack, but for the rare one that followed
  // a ≥ 500 µs stall between calls (the host preempting the thread between two calls).
  const int64_t fast = q_int(db, "SELECT count(*)" + calls + " AND dur_ns < 50000");
  const int64_t fast_stacked = q_int(db, "SELECT count(*)" + calls + " AND dur_ns < 50000 AND stack_id IS NOT NULL");
  CAPTURE(fast);
  CAPTURE(fast_stacked);
  CHECK(fast > iters);
  CHECK(fast_stacked * 100 <= fast);  // ≤ 1%; without the policy every call had one
}

}  // namespace causeway::test
