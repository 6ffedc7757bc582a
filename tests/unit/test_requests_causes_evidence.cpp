// Request causes over everything the session recorded, whatever the question filters; the
// cpu_contention culprit by the time it held the engine's CPU, never the tracer; one
// arbitration per gap (issue 37; docs/INFERENCE.md "Causes keyed to requests", "Claims on one
// gap"). Rows written by the real writer to a real SQLite file, asked through
// request_latency_json.
#include <doctest/doctest.h>

#include "diagnosis/causes/request_registry.h"
#include "diagnosis/chain_text.h"
#include "diagnosis/request_evidence.h"
#include "diagnosis/request_latency.h"
#include "requests/to_record.h"
#include "tests/unit/request_db.h"
#include "tests/unit/request_rows.h"
#include "tracedb/op_catalog.h"
#include "diagnosis/tracer_pid.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using namespace causeway::requests;
using json = nlohmann::json;

namespace {

// Four tokens 10 ms apart; the gap before token `at` (1-based) `gap_ms` long instead.
Request chat_stream(const std::string& id, int64_t start_ms, const std::string& tenant, size_t at = 0, int64_t gap_ms = 10) {
  Request r = streamed(id, start_ms, 15, 4, 10, tenant);
  r.prompt_bytes = 300;
  for (size_t i = at; at && i < r.token_ns.size(); ++i) r.token_ns[i] += (gap_ms - 10) * kMs;
  r.last_byte_ns = r.token_ns.back() + kMs;
  return r;
}

json ask(Db& db, Metric m, std::optional<std::string> tenant) {
  auto h = open_read_only(db.path);
  REQUIRE(h);
  RequestQuery rq;
  rq.metric = m;
  rq.quantile = 0.99;
  rq.tenant = std::move(tenant);
  auto r = request_latency_json(h->get(), rq);
  REQUIRE(r);
  return *r;
}

// The engine core (101, under the API server 100): a 9.5 ms pass every 10 ms (two launches and
// a sync), but from 6000 ms five chunked-prefill passes of 40 ms (another tenant's long
// prompt, 40 kB, prefilled in 5 chunks). Chat streams: 95 quick ones, five whose second gap
// (around 6000..6215 ms) waited for those chunks.
// `docs_prompt_tokens`: the server's usage.prompt_tokens for the long prompt, when it said.
void chunked_prefill_db(StoreWriter& w, std::optional<uint64_t> docs_prompt_tokens = std::nullopt) {
  w.push_meta(ProcessRecord{.pid = 101, .ppid = 100, .comm = "EngineCore"});
  for (int i = 0; i < 95; ++i) w.push_meta(to_record(chat_stream("c" + std::to_string(i), i * 50, "chat")));
  for (int i = 0; i < 5; ++i) w.push_meta(to_record(chat_stream("s" + std::to_string(i), 5970, "chat", 2, 215)));
  Request doc = streamed("docs-1", 5995, 210, 4, 10, "docs");
  doc.prompt_bytes = 40000;
  doc.input_tokens = docs_prompt_tokens;
  w.push_meta(to_record(doc));
  int64_t t10 = 0;  // in 0.1 ms
  int chunks = 0;
  while (t10 < 100'000) {
    const bool chunk = t10 >= 60'000 && chunks < 5;
    const int64_t len10 = chunk ? 400 : 95;
    for (int k = 0; k < 2; ++k) {
      CallRecord c;
      c.pid = c.tid = 101;
      c.op = find_op("cudaLaunchKernel")->id;
      c.ts_ns = kT0 + t10 * 100'000 + k * 10'000;
      c.dur_ns = 5'000;
      w.push_wait(c);
    }
    CallRecord s;
    s.pid = s.tid = 101;
    s.op = find_op("cudaStreamSynchronize")->id;
    s.ts_ns = kT0 + t10 * 100'000 + 30'000;
    s.dur_ns = len10 * 100'000 - 30'000;
    w.push_wait(s);
    t10 += chunk ? 401 : 100;
    chunks += chunk;
  }
}

}  // namespace

TEST_CASE("--tenant chooses the requests judged, not the evidence: another tenant's long chunked prefills are named") {
  Db db([](StoreWriter& w) { chunked_prefill_db(w); });
  for (std::optional<std::string> tenant : {std::optional<std::string>{}, std::optional<std::string>{"chat"}}) {
    CAPTURE(tenant.value_or("(all)"));
    const json d = ask(db, Metric::itl, tenant)["requests"];
    CAPTURE(d["tail"].dump());
    const json* p = cause(d["tail"], "prefill_interference");
    REQUIRE(p != nullptr);
    CHECK((*p)["requests"] == 5);
    // Five chunks' 30.5 ms above the 9.5 ms median pass, of the gap's 205 ms above the median gap.
    CHECK((*p)["share_time"].get<double>() == doctest::Approx(5 * 30.5 / 205).epsilon(0.03));
    const json& k = (*p)["culprit"];
    CHECK(k["requests"] == json::array({"docs-1"}));
    REQUIRE(k["long_requests"].size() == 1);
    CHECK(k["long_requests"][0]["id"] == "docs-1");
    CHECK(k["long_requests"][0]["prompt_bytes"] == 40000);
    CHECK(k["long_requests"][0]["tenant"] == "docs");
    CHECK(k["basis"] == "forward_pass");
    CHECK(k["pass_ms"].get<double>() == doctest::Approx(40).epsilon(0.02));
    CHECK(k["median_pass_ms"].get<double>() == doctest::Approx(9.5).epsilon(0.05));
  }
  // The filter still chooses what is reported: only chat's requests.
  const json chat = ask(db, Metric::itl, "chat")["requests"];
  CHECK(chat["count"] == 100);
  for (const json& b : chat["by"]) CHECK(b["tenant"] == "chat");
  const json text_doc = ask(db, Metric::itl, "chat");
  const std::string text = request_latency_text(text_doc);
  CAPTURE(text);
  CHECK(text.find("docs-1 (40000 prompt bytes, tenant docs)") != std::string::npos);
}

// Issue 37: the long requests carry their prompt in tokens when the server said (usage.prompt_tokens,
// stored as requests.input_tokens), in bytes only otherwise; requests --json and MCP (one answer),
// the text, and the stored chain that explain and the report show ("the long requests" first).
TEST_CASE("prefill_interference names the long requests' prompt tokens when known, bytes otherwise") {
  Db db([](StoreWriter& w) { chunked_prefill_db(w, 9000); });
  const json d = ask(db, Metric::itl, "chat");
  const json* p = cause(d["requests"]["tail"], "prefill_interference");
  REQUIRE(p != nullptr);
  const json& l = (*p)["culprit"]["long_requests"];
  REQUIRE(l.size() == 1);
  CHECK(l[0] == json({{"id", "docs-1"}, {"prompt_tokens", 9000}, {"tenant", "docs"}}));
  CHECK(request_latency_text(d).find("docs-1 (9000 prompt tokens, tenant docs)") != std::string::npos);

  auto h = open_read_only(db.path);
  REQUIRE(h);
  const json chains = request_chain_docs(h->get());
  const json* chain = nullptr;
  for (const json& c : chains)
    if (c["cause"] == "prefill_interference") chain = &c;
  REQUIRE(chain != nullptr);
  CHECK((*chain)["culprit"]["long_requests"] == l);
  // The culprit line of explain and the report: the long requests first, then the engine.
  const std::string line = culprit_line((*chain)["culprit"]);
  CAPTURE(line);
  CHECK(line.rfind("long request docs-1 (9000 prompt tokens, tenant docs); prefilled by EngineCore (pid 101)", 0) == 0);
}

namespace {

constexpr uint32_t kTracer = 900, kHog = 901;

// The engine core's thread (101) on CPU 1 is preempted at 6000 ms and runs again at 6400 ms.
// Meanwhile the tracer (900) takes the CPU 29 times for 1 ms, each time just before the engine
// thread gets it back or between the hog's slices, and the hog's two workers (901, threads 9011
// and 9012) hold it the rest of the time in 34 slices. The tracer ran last before the engine
// thread came back: the old rule (who ran just before) named it.
void busy_cpu_db(StoreWriter& w, bool record_tracer) {
  w.push_meta(ProcessRecord{.pid = 101, .ppid = 100, .comm = "EngineCore"});
  w.push_meta(ProcessRecord{.pid = kTracer, .ppid = 1, .comm = "causeway"});
  w.push_meta(ProcessRecord{.pid = kHog, .ppid = 1, .comm = "hog"});
  if (record_tracer) w.set_counter(std::string(kTracerPidCounter), kTracer);
  for (int i = 0; i < 95; ++i) w.push_meta(to_record(chat_stream("c" + std::to_string(i), i * 50, "t")));
  for (int i = 0; i < 5; ++i) w.push_meta(to_record(chat_stream("s" + std::to_string(i), 5970, "t", 2, 415)));
  auto sw = [&](int64_t ts, uint32_t prev_tid, uint32_t prev_pid, int64_t state, uint32_t next_tid, uint32_t next_pid) {
    SwitchRecord s;
    s.ts_ns = ts;
    s.cpu = 1;
    s.prev_tid = prev_tid, s.prev_pid = prev_pid, s.prev_state = state;
    s.next_tid = next_tid, s.next_pid = next_pid;
    w.push_wait(s);
  };
  int64_t t = kT0 + 6000 * kMs;
  sw(t, 101, 101, 0, kTracer, kTracer);  // preempted, still runnable
  uint32_t prev_tid = kTracer, prev_pid = kTracer;
  t += kMs;
  for (int i = 0; i < 34; ++i) {
    const uint32_t hog_tid = i % 2 ? 9012 : 9011;
    sw(t, prev_tid, prev_pid, 0, hog_tid, kHog);
    t += 10 * kMs;  // 34 × 10 ms of hog
    if (i < 28) {
      sw(t, hog_tid, kHog, 0, kTracer, kTracer);
      prev_tid = prev_pid = kTracer;
      t += kMs;  // 28 more ms of tracer: 29 in all
    } else {
      prev_tid = hog_tid, prev_pid = kHog;
    }
  }
  sw(t, prev_tid, prev_pid, 0, kTracer, kTracer);
  t += kMs / 2;
  sw(t, kTracer, kTracer, 1, 101, 101);  // the tracer sleeps; the engine thread is back
}

}  // namespace

TEST_CASE("cpu_contention: the culprit is who held the engine's CPU the longest, never the tracer, whose time is reported") {
  Db db([](StoreWriter& w) { busy_cpu_db(w, true); });
  const json d = ask(db, Metric::itl, std::nullopt)["requests"];
  CAPTURE(d["tail"].dump());
  const json* c = cause(d["tail"], "cpu_contention");
  REQUIRE(c != nullptr);
  const json& k = (*c)["culprit"];
  CHECK(k["pid"] == kHog);
  CHECK(k["comm"] == "hog");
  CHECK(k["share"].get<double>() == doctest::Approx(1.0));
  CHECK(k["tracer_overhead_ms"].get<double>() == doctest::Approx(29.5).epsilon(0.02));
  // Its words in explain and the report (a request chain's culprit line): a share of the time
  // the cause claimed; a request chain has no slow calls.
  auto h = open_read_only(db.path);
  REQUIRE(h);
  int lines = 0;
  for (const json& chain : request_chain_docs(h->get()))
    if (chain["cause"] == "cpu_contention") {
      ++lines;
      REQUIRE(is_request_chain(chain));
      const std::string line = culprit_line(chain["culprit"], is_request_chain(chain));
      CAPTURE(line);
      CHECK(line.find("hog (pid 901), 100% of the time the cause claimed") == 0);
      CHECK(line.find("slow calls") == std::string::npos);
    }
  CHECK(lines > 0);
  // 340 ms of hog in each gap's 400 ms above the median (the tracer's 29.5 ms are not claimed).
  CHECK((*c)["share_time"].get<double>() == doctest::Approx(340.0 / 400).epsilon(0.03));
  for (const json& s : d["slowest"])
    for (const json& sc : s["causes"]) CHECK(sc["culprit"].value("comm", "") != "causeway");

  // A session that does not say which pid traced it (a demo, an import, an older collector):
  // the hog still leads by time.
  Db old([](StoreWriter& w) { busy_cpu_db(w, false); });
  const json o = ask(old, Metric::itl, std::nullopt)["requests"];
  const json* oc = cause(o["tail"], "cpu_contention");
  REQUIRE(oc != nullptr);
  CHECK((*oc)["culprit"]["pid"] == kHog);
  CHECK_FALSE((*oc)["culprit"].contains("tracer_overhead_ms"));
}

TEST_CASE("one arbitration per gap: a long prefill and CPU contention on the same gaps never add past the gap") {
  Db db([](StoreWriter& w) {
    chunked_prefill_db(w);
    w.push_meta(ProcessRecord{.pid = kHog, .ppid = 1, .comm = "hog"});
    // The engine thread also waits runnable for 190 ms of the same stall while a hog runs.
    SwitchRecord out;
    out.ts_ns = kT0 + 6005 * kMs;
    out.cpu = 1;
    out.prev_tid = out.prev_pid = 101;
    out.next_tid = out.next_pid = kHog;
    w.push_wait(out);
    SwitchRecord in;
    in.ts_ns = kT0 + 6195 * kMs;
    in.cpu = 1;
    in.prev_tid = in.prev_pid = kHog;
    in.next_tid = in.next_pid = 101;
    w.push_wait(in);
  });
  const json d = ask(db, Metric::itl, std::nullopt)["requests"];
  CAPTURE(d["tail"].dump());
  const json* p = cause(d["tail"], "prefill_interference");
  REQUIRE(p != nullptr);
  double sum = 0;
  for (const json& c : d["tail"]["causes"]) sum += c["share_time"].get<double>();
  CHECK(sum <= 1.0 + 1e-9);
  CHECK(d["tail"]["causes"][0]["cause"] == "prefill_interference");  // the named pass takes its time first
  for (const json& s : d["slowest"]) {
    double lost = 0;
    for (const json& c : s["causes"]) lost += c["lost_ms"].get<double>();
    CHECK(lost <= 205.5);  // the slow gap's excess over the median gap, never more
  }
}

// What the registry needs of a module, refused at compile time (docs/DIAGNOSIS.md "Adding a
// cause", request level): these descriptors are what a newcomer might write.
namespace request_module_shapes {
struct Complete {
  static constexpr RequestCause id = RequestCause::queueing;
  static constexpr std::string_view name = "queueing";
  static constexpr ClaimTier tier = ClaimTier::engine_state;
  static const char* recommendation(const Culprit&) { return "r"; }
  static void find(RequestEvidence&, const SlowPart&, std::vector<CauseClaim>&) {}
};
struct NoDetector {  // neither find() nor found_with
  static constexpr RequestCause id = RequestCause::queueing;
  static constexpr std::string_view name = "queueing";
  static constexpr ClaimTier tier = ClaimTier::engine_state;
  static const char* recommendation(const Culprit&) { return "r"; }
};
struct NoRecommendation {
  static constexpr RequestCause id = RequestCause::queueing;
  static constexpr std::string_view name = "queueing";
  static constexpr ClaimTier tier = ClaimTier::engine_state;
  static void find(RequestEvidence&, const SlowPart&, std::vector<CauseClaim>&) {}
};
struct UntypedCulprit {  // a culprit as JSON, not the one Culprit type (diagnosis/culprit.h)
  static constexpr RequestCause id = RequestCause::queueing;
  static constexpr std::string_view name = "queueing";
  static constexpr ClaimTier tier = ClaimTier::engine_state;
  static const char* recommendation(const json&) { return "r"; }
  static void find(RequestEvidence&, const SlowPart&, std::vector<CauseClaim>&) {}
};
struct FoundWithOther {
  static constexpr RequestCause id = RequestCause::memory_pressure;
  static constexpr std::string_view name = "memory_pressure";
  static constexpr ClaimTier tier = ClaimTier::host_state;
  static constexpr RequestCause found_with = RequestCause::io_contention;
  static const char* recommendation(const Culprit&) { return "r"; }
};
}  // namespace request_module_shapes

TEST_CASE("the request registry's concept refuses a module without a detector or a recommendation, or with an untyped culprit") {
  using namespace request_module_shapes;
  static_assert(RequestCauseModule<Complete>);
  static_assert(RequestCauseModule<FoundWithOther>);
  static_assert(!RequestCauseModule<NoDetector>);
  static_assert(!RequestCauseModule<NoRecommendation>);
  static_assert(!RequestCauseModule<UntypedCulprit>);
  // A list that leaves an enumerator without a module does not compile (the registry's
  // static_assert); the real one has one module per enumerator.
  CHECK(RequestCauses::complete());
  CHECK(RequestCauses::size == static_cast<size_t>(kRequestCauseCount));
}
