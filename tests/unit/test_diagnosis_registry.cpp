// The cause registry: a module with typed evidence and both renderers plugs in with one line
// (a registry listing it), and a module missing a renderer is rejected at compile time.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "analysis/causes/registry.h"
#include "analysis/chain_json.h"
#include "analysis/chain_view.h"

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
