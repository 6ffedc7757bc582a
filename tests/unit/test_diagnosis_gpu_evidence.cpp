// gpu_wait needs positive GPU evidence (docs/DIAGNOSIS.md "GPU evidence"): a slow sync with no
// host cause is HIGH only when GPU work was queued ahead of it (or submitted beside it by
// another process). Absence of host evidence is not evidence of a GPU wait. Both sync
// flavours: a spinning sync (the thread stays on-CPU) and a blocking one (asleep until the
// driver's interrupt wakes it: woken by pid 0, never by a sibling). A synchronous copy that
// loses its time on-CPU is host work as far as the trace shows (staging or faulting in a
// pageable source), so it is never a GPU wait even with work queued ahead; asleep in the driver
// it is.
#include <doctest/doctest.h>

#include "diagnosis/correlator.h"
#include "bpf/events.h"
#include "tests/support/test_support.h"
#include "tests/unit/diagnosis_live_session.h"

using namespace causeway;
using causeway::test::Live;
using causeway::test::TempDir;

namespace {

constexpr int64_t kUs = 1'000, kMs = 1'000'000;
constexpr uint32_t kW = 4200, kOther = 4201;

enum class Sync { spinning, blocking };

// 3,000 iterations; one sync (or synchronous copy: `op`) in ten takes 10 ms instead of 1 ms.
// With `queued`, each follows a kernel launch (work ahead of it on the GPU queue); without,
// the thread only syncs. Another process preempts the thread for a few µs between two calls
// now and then, so the session and the thread have scheduler data either way.
std::vector<ChainRecord> run(const std::string& path, Sync kind, bool queued, uint16_t op = CW_OP_CUDA_STREAM_SYNC) {
  Live l(path);
  l.proc(kW, "trainer");
  l.proc(kOther, "other");
  int64_t t = l.t0 + kMs;
  for (int i = 0; i < 3000; ++i) {
    if (queued) {
      l.call(kW, kW, CW_OP_CUDA_LAUNCH_KERNEL, t, 20 * kUs, {0, 0xdead0000});
      t += 30 * kUs;
    }
    const int64_t dur = i % 10 == 3 ? 10 * kMs : kMs;
    l.call(kW, kW, op, t, dur, {256 << 10, 0x7f3a60000000, 1, 0});
    if (kind == Sync::blocking) {
      l.sw(t + 20 * kUs, kW, kW, 1, 0, 0);  // asleep (S) in the driver's wait
      l.wake(t + dur - 30 * kUs, kW, kW, 0, 0);
      l.sw(t + dur - 20 * kUs, 0, 0, 0, kW, kW);
    }
    if (i % 100 == 50) {
      l.sw(t + dur + 5 * kUs, kW, kW, 0, kOther + 1000, kOther);
      l.sw(t + dur + 8 * kUs, kOther + 1000, kOther, 1, kW, kW);
    }
    t += dur + 50 * kUs;
  }
  return l.finish(path);
}

const ChainRecord* find(const std::vector<ChainRecord>& chains, const std::string& cause) {
  for (const auto& c : chains)
    if (c.pid == kW && c.cause == cause) return &c;
  return nullptr;
}

std::string describe(const std::vector<ChainRecord>& chains) {
  std::string s;
  for (const auto& c : chains) s += c.severity + " " + c.cause + " " + c.op + " calls " + std::to_string(c.calls) + " " + c.summary + "\n";
  return s;
}

}  // namespace

TEST_CASE("gpu_wait evidence: a spinning or blocking sync with work queued ahead is HIGH") {
  for (Sync kind : {Sync::spinning, Sync::blocking}) {
    TempDir dir;
    auto chains = run(dir.file("g.db"), kind, true);
    INFO((kind == Sync::spinning ? "spinning\n" : "blocking\n") << describe(chains));
    const ChainRecord* c = find(chains, "gpu_wait");
    REQUIRE(c);
    CHECK(c->severity == "HIGH");
    CHECK(c->calls == 300);
  }
}

TEST_CASE("gpu_wait evidence: a spinning or blocking sync with nothing queued ahead is never above LOW") {
  for (Sync kind : {Sync::spinning, Sync::blocking}) {
    TempDir dir;
    auto chains = run(dir.file("g.db"), kind, false);
    INFO((kind == Sync::spinning ? "spinning\n" : "blocking\n") << describe(chains));
    const ChainRecord* c = find(chains, "gpu_wait");
    REQUIRE(c);  // still reported, for what it is
    CHECK(c->severity == "LOW");
    CHECK(c->summary.find("evidence is weak") != std::string::npos);
    for (const auto& x : chains) CHECK(x.severity != "HIGH");
  }
}

TEST_CASE("gpu_wait evidence: a synchronous copy spinning on-CPU is not a GPU wait, even with work queued ahead") {
  TempDir dir;
  auto chains = run(dir.file("g.db"), Sync::spinning, true, CW_OP_CUDA_MEMCPY);
  INFO(describe(chains));
  CHECK(find(chains, "gpu_wait") == nullptr);
  // The copies are the thread's whole time: transfer_bound (HIGH) says so; nothing blames the GPU.
  for (const auto& x : chains) CHECK((x.severity != "HIGH" || x.cause == "transfer_bound"));
  const ChainRecord* u = find(chains, "unknown");
  REQUIRE(u);
  CHECK(u->severity == "LOW");
  CHECK(u->doc.find("synchronous copies that lost their time on-CPU") != std::string::npos);
}

TEST_CASE("gpu_wait evidence: a synchronous copy asleep in the driver with work queued ahead is HIGH") {
  TempDir dir;
  auto chains = run(dir.file("g.db"), Sync::blocking, true, CW_OP_CUDA_MEMCPY);
  INFO(describe(chains));
  const ChainRecord* c = find(chains, "gpu_wait");
  REQUIRE(c);
  CHECK(c->severity == "HIGH");
  CHECK(c->calls == 300);
}
