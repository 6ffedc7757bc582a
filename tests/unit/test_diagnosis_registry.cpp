// The cause registry: a module with typed evidence and both renderers plugs in with one line
// (a registry listing it), and a module missing a renderer is rejected at compile time; a
// session cause with its own State is fed by the registry's observe hooks and reported from it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "diagnosis/causes/registry.h"
#include "diagnosis/chain_json.h"
#include "diagnosis/chain_view.h"
#include "diagnosis/chunk_context.h"
#include "bpf/events.h"

using namespace causeway;

namespace {

// A cause only this test build knows: its id is outside the production enumerators.
struct FakeStall {
  static constexpr Cause id = static_cast<Cause>(200);
  static constexpr std::string_view name = "fake_stall";
  struct Evidence {
    int64_t stalls = 0;
  };
  static Finding explain(const ChainView& v, const Evidence& e) {
    Finding f;
    f.summary = v.victim + ": " + std::to_string(e.stalls) + " fake stalls";
    f.culprit = Culprit{.pid = 42, .comm = "faker", .share_kind = ShareKind::wait, .share = 0.5};
    f.evidence.push_back("stalls counted: " + std::to_string(e.stalls));
    return f;
  }
  static std::string fix(const ChainView&, const Evidence&) { return "stop faking"; }
};

struct NoFix {  // explains but has no fix(): not a cause module
  static constexpr Cause id = static_cast<Cause>(201);
  static constexpr std::string_view name = "no_fix";
  struct Evidence {};
  static Finding explain(const ChainView&, const Evidence&) { return {}; }
};

struct UntypedId {  // a string where the Cause id belongs
  static constexpr std::string_view id = "untyped";
  static constexpr std::string_view name = "untyped";
  struct Evidence {};
  static Finding explain(const ChainView&, const Evidence&) { return {}; }
  static std::string fix(const ChainView&, const Evidence&) { return {}; }
};

static_assert(CauseModule<FakeStall>);
static_assert(!CauseModule<NoFix>, "a module without a fix() must not compile into a registry");
static_assert(!CauseModule<UntypedId>);
static_assert(CauseModule<CpuContention> && CauseModule<GpuWait> && CauseModule<Unknown>);

// A session cause only this test build knows: its accumulator is its own State, which the
// registry holds and feeds through observe(); report() writes its chain from it.
struct FakeSessionCause {
  static constexpr Cause id = static_cast<Cause>(202);
  static constexpr std::string_view name = "fake_session";
  struct State {
    int64_t normal_syncs = 0;
  };
  static void observe(State& st, const Ev& e, const ObserveContext& cx) {
    if (is_gpu_wait_op(e.op) && cx.verdict == CallVerdict::normal) ++st.normal_syncs;
  }
  static void report(SessionReport& r, State& st) {
    Doc d;
    d.id = "s1-fake_session-7";
    d.cause = id;
    d.pid = 7;
    d.severity = Severity::low;
    d.summary = std::to_string(st.normal_syncs) + " normal syncs";
    emit(r, std::move(d));
  }
};

struct ReportsNothing {  // a session cause without report(): rejected
  static constexpr Cause id = static_cast<Cause>(203);
  static constexpr std::string_view name = "reports_nothing";
  struct State {};
  static void observe(State&, const Ev&, const ObserveContext&) {}
};

static_assert(SessionCauseModule<FakeSessionCause> && ObservesCalls<FakeSessionCause> && !ObservesChunks<FakeSessionCause>);
static_assert(!SessionCauseModule<ReportsNothing>);
static_assert(SessionCauseModule<HostBound> && !HasState<HostBound>);
static_assert(HasState<GpuWait> && CauseModule<GpuWait>, "a per-call cause with a State renders with it");

using TestCauses = CauseRegistry<CpuContention, FakeStall>;
static_assert(TestCauses::size == 2);
static_assert(TestCauses::has(FakeStall::id) && !TestCauses::has(Cause::gpu_wait));
static_assert(TestCauses::name(FakeStall::id) == "fake_stall");

}  // namespace

TEST_CASE("production registry: every cause has one module and its INTERFACES name") {
  CHECK(cause_name(Cause::cpu_contention) == "cpu_contention");
  CHECK(cause_name(Cause::io_contention) == "io_contention");
  CHECK(cause_name(Cause::nccl_straggler) == "nccl_straggler");
  CHECK(cause_name(Cause::transfer_bound) == "transfer_bound");
  CHECK(cause_name(Cause::unknown) == "unknown");
  for (int i = 0; i < kCauseCount; ++i) CHECK(!cause_name(static_cast<Cause>(i)).empty());
}

TEST_CASE("a fake cause added to a registry is rendered into a chain by its own module") {
  CorrelatorState s;
  s.session_id = 1;
  s.procs[7] = ProcInfo{"victim", 1};
  ChainAcc a;
  a.id = "s1-fake_stall-7";
  a.cause = FakeStall::id;
  a.pid = 7;
  a.calls = 3;
  a.lost_ns = 500'000'000;
  a.first_ns = 0;
  a.last_ns = 1'000'000'000;
  ++a.tids[7];
  a.evidence = FakeStall::Evidence{3};

  SessionReport r{s, nullptr, 1'000'000'000, {}};
  render_call_chain<TestCauses>(r, a);
  REQUIRE(r.out.size() == 1);
  CHECK(r.out[0].cause == FakeStall::id);  // typed until it is written
  REQUIRE(r.out[0].culprit.has_value());
  const ChainRecord c = chain_record(r.out[0], TestCauses::name(r.out[0].cause));
  CHECK(c.cause == "fake_stall");
  CHECK(c.severity == "HIGH");  // half the window lost
  CHECK(c.summary.find("3 fake stalls") != std::string::npos);
  CHECK(c.culprit_pid == 42u);
  CHECK(c.culprit_share == 0.5);
  auto doc = nlohmann::json::parse(c.doc);
  CHECK(doc["recommendation"] == "stop faking");
  CHECK(doc["evidence"][0] == "stalls counted: 3");
  CHECK(doc["comm"] == "victim");
  CHECK(doc["culprit"] == nlohmann::json{{"pid", 42}, {"comm", "faker"}, {"wait_share", 0.5}});
}

TEST_CASE("a fake session cause plugs in with one line: the registry owns its State, feeds it, reports it") {
  using TestSession = SessionCauseList<HostBound, FakeSessionCause>;
  TestSession::States states;
  CorrelatorState s;
  s.session_id = 1;
  s.procs[7] = ProcInfo{"victim", 1};
  ThreadTimelines tl;
  HostIndex hx;
  std::vector<CollectiveEntry> entries;
  std::vector<CollectiveGroup> groups;
  std::map<std::pair<int64_t, int64_t>, size_t> group_of;
  std::unordered_map<uint32_t, std::pair<int64_t, int64_t>> last_coll;
  const ChunkContext cx{s, tl, hx, entries, groups, group_of, last_coll};
  Ev sync;
  sync.pid = sync.tid = 7;
  sync.op = CW_OP_CUDA_STREAM_SYNC;
  Ev launch = sync;
  launch.op = CW_OP_CUDA_LAUNCH_KERNEL;
  TestSession::observe_all(states, sync, ObserveContext{cx, false, CallVerdict::normal});
  TestSession::observe_all(states, sync, ObserveContext{cx, false, CallVerdict::normal});
  TestSession::observe_all(states, sync, ObserveContext{cx, false, CallVerdict::claimed});  // another cause's
  TestSession::observe_all(states, launch, ObserveContext{cx, false, CallVerdict::normal});
  CHECK(TestSession::state<FakeSessionCause>(states).normal_syncs == 2);

  SessionReport r{s, nullptr, 1'000'000'000, {}};
  TestSession::report_all(r, states);  // host_bound: no scheduler data, no chain
  REQUIRE(r.out.size() == 1);
  CHECK(r.out[0].cause == FakeSessionCause::id);
  CHECK(r.out[0].summary == "2 normal syncs");
}
