// The one chain serializer (diagnosis/chain_json.h): a typed chain is written once, each culprit
// field under its one key (the share's key by its kind), and the chains-table columns come
// from the same typed values (severity and cause spelled from their enums).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "diagnosis/causes/registry.h"
#include "diagnosis/chain_json.h"

using namespace causeway;
using json = nlohmann::json;

namespace {

Doc straggler_chain() {
  Doc d;
  d.id = "s1-nccl_straggler-7-comm1";
  d.cause = Cause::nccl_straggler;
  d.severity = Severity::medium;
  d.pid = 8;
  d.tid = 9;
  d.comm = "python3";
  d.op = "ncclAllReduce";
  d.calls = 12;
  d.lost_ns = 2'500'000;
  d.from_ns = 100;
  d.to_ns = 200;
  d.p50_us = 12.34;
  d.p99_us = 56.78;
  d.slow_share = 0.12345;
  d.impact = 0.012345;
  d.summary = "rank 2 (pid 7) entered last";
  d.recommendation = "fix rank 2";
  d.culprit = Culprit{.pid = 7, .comm = "python3", .share_kind = ShareKind::late, .share = 0.9, .rank = 2,
                      .own_cause = "cpu_contention", .preempted_by = Preempter{991, "rsync", 0.5}};
  d.culprit->host = "node-b";
  d.culprit->host_pid = 4007;
  d.culprit->rank_source = "init";
  d.culprit->waiting_hosts = std::vector<WaitingHost>{{"node-a", {8, 10}}};
  d.culprit->tenant = CulpritTenant{"/system.slice/train.service", std::nullopt, std::nullopt};
  d.victims = std::vector<StragglerVictim>{{8, "python3", 2500, "node-a", 4008}};
  d.host = "node-a";
  d.host_pid = 4008;
  d.evidence = {"one", "two"};
  d.timeline = {{150, "nccl", "late"}, {120, "host", "preempted"}};
  d.frames = {"train.py:1 (step)"};
  return d;
}

}  // namespace

TEST_CASE("chain_record writes the typed chain in the INTERFACES shape, once") {
  const Doc d = straggler_chain();
  const ChainRecord r = chain_record(d, cause_name(d.cause));
  CHECK(r.cause == "nccl_straggler");
  CHECK(r.severity == "MEDIUM");
  CHECK(r.p50_us == 12.3);
  CHECK(r.slow_share == 0.123);
  CHECK(r.culprit_pid == 7u);
  CHECK(r.culprit_comm == "python3");
  CHECK(r.culprit_share == 0.9);
  const json doc = json::parse(r.doc);
  CHECK(doc["cause"] == r.cause);
  CHECK(doc["severity"] == r.severity);
  CHECK(doc["host"] == "node-a");
  CHECK(doc["host_pid"] == 4008);
  CHECK(doc["where"] == "in_call");
  CHECK(doc["lost_us"] == 2500);
  CHECK(doc["impact"] == 0.0123);
  CHECK(doc["window"] == json{{"from_ns", 100}, {"to_ns", 200}});
  CHECK(doc["culprit"] == json::parse(R"({"pid":7,"comm":"python3","late_share":0.9,"rank":2,"own_cause":"cpu_contention",
      "preempted_by":{"pid":991,"comm":"rsync","share":0.5},"host":"node-b","host_pid":4007,"rank_source":"init",
      "waiting_hosts":[{"host":"node-a","pids":[8,10]}],"cgroup":"/system.slice/train.service","container":null})"));
  CHECK(doc["victims"] == json::parse(R"([{"pid":8,"comm":"python3","wait_us":2500,"host":"node-a","host_pid":4008}])"));
  CHECK(doc["stack"] == json{"train.py:1 (step)"});
  CHECK(doc["evidence"] == json{"one", "two"});
  CHECK(doc["timeline"].size() == 2);
  CHECK(doc["recommendation"] == "fix rank 2");
}

TEST_CASE("each share kind is written under its own key, and a peer stands in for a comm") {
  const std::pair<ShareKind, const char*> kinds[] = {{ShareKind::off_cpu, "off_cpu_share"}, {ShareKind::wait, "wait_share"},
                                                     {ShareKind::overlap, "overlap_share"}, {ShareKind::page, "page_share"},
                                                     {ShareKind::late, "late_share"},       {ShareKind::slow_calls, "share"}};
  for (auto [kind, key] : kinds) {
    Doc d;
    d.cause = Cause::network;
    d.culprit = Culprit{.peer = "10.0.0.2:443", .share_kind = kind, .share = 0.25, .retransmits = 3};
    const ChainRecord r = chain_record(d, cause_name(d.cause));
    const json c = json::parse(r.doc)["culprit"];
    CHECK(c == json{{"peer", "10.0.0.2:443"}, {key, 0.25}, {"retransmits", 3}});
    CHECK(!r.culprit_pid);
    CHECK(r.culprit_comm == "10.0.0.2:443");
    CHECK(r.culprit_share == 0.25);
  }
}

TEST_CASE("a chain without a culprit, victims or host writes none of those keys") {
  Doc d;
  d.cause = Cause::cold_start;
  d.severity = Severity::high;
  d.between = true;
  const ChainRecord r = chain_record(d, cause_name(d.cause));
  const json doc = json::parse(r.doc);
  for (const char* k : {"culprit", "victims", "host", "host_pid", "tid"}) CHECK_MESSAGE(!doc.contains(k), k);
  CHECK(doc["where"] == "between_calls");
  CHECK(doc["stack"] == json::array());
  CHECK(r.severity == "HIGH");
  CHECK(!r.culprit_pid);
  CHECK(!r.culprit_share);
}

TEST_CASE("a culprit's tenant names its container and pod; a data worker's culprit lists the workers") {
  Doc d;
  d.cause = Cause::dataloader_starvation;
  d.culprit = Culprit{.pid = 4901, .comm = "pt_data_worker", .share_kind = ShareKind::wait, .share = 1.0, .doing = "block_io",
                      .doing_share = 0.848, .workers = std::vector<DataWorkerShare>{{4901, "pt_data_worker", 1.0, "block_io"}},
                      .io_bytes = 4096};
  d.culprit->tenant = CulpritTenant{"/kubepods.slice/x.scope", "3f9a", "default/vllm"};
  const json c = json::parse(chain_record(d, cause_name(d.cause)).doc)["culprit"];
  CHECK(c == json::parse(R"({"pid":4901,"comm":"pt_data_worker","wait_share":1.0,"doing":"block_io","doing_share":0.848,
      "workers":[{"pid":4901,"comm":"pt_data_worker","wait_share":1.0,"doing":"block_io"}],"io_bytes":4096,
      "cgroup":"/kubepods.slice/x.scope","container":"3f9a","pod":"default/vllm"})"));
}

// Issue 37: a request chain goes through the same serializer; its culprit is the same typed
// Culprit. prefill_interference's has no share (ShareKind::none: no key, no culprit_share), and
// each long request carries its prompt in tokens when known, else in bytes — one of the two.
TEST_CASE("a request chain's typed culprit: the long requests with tokens or bytes, no share key") {
  RequestChainDoc d;
  d.id = "s1-req-itl-prefill_interference";
  d.severity = Severity::high;
  d.metric = "itl";
  d.op = "ITL (token gaps)";
  d.pid = 5300;
  d.comm = "python3";
  d.requests = 40;
  d.request_ids = {"req-1"};
  d.share_time = 0.969;
  d.impact = 12.8;
  d.p50_us = 20000;
  d.p99_us = 327000;
  d.culprit = Culprit{.pid = 5301, .comm = "EngineCore", .share_kind = ShareKind::none};
  d.culprit.long_requests = std::vector<LongRequest>{{.id = "docs-1", .prompt_tokens = 9000, .prompt_bytes = 40000, .tenant = "docs"},
                                                     {.id = "docs-2", .prompt_bytes = 38000, .tenant = "docs"}};
  d.culprit.basis = PrefillBasis::forward_pass;
  d.culprit.pass_ms = 40.0;
  d.culprit.median_pass_ms = 9.5;
  const ChainRecord r = chain_record(d, "prefill_interference");
  CHECK(r.calls == 40);
  CHECK(r.slow_share == 0.969);
  CHECK(r.culprit_pid == 5301u);
  CHECK(r.culprit_comm == "EngineCore");
  CHECK(!r.culprit_share);
  const json doc = json::parse(r.doc);
  CHECK(doc["level"] == "request");
  CHECK(doc["share_time"] == 0.969);
  for (const char* k : {"calls", "p50_us", "p99_us", "where", "timeline"}) CHECK_MESSAGE(!doc.contains(k), k);
  CHECK(doc["culprit"] == json::parse(R"({"pid":5301,"comm":"EngineCore","requests":["docs-1","docs-2"],
      "long_requests":[{"id":"docs-1","prompt_tokens":9000,"tenant":"docs"},{"id":"docs-2","prompt_bytes":38000,"tenant":"docs"}],
      "basis":"forward_pass","pass_ms":40.0,"median_pass_ms":9.5})"));
}

TEST_CASE("a request cause's share is written under \"share\" and fills culprit_share; io_contention's under overlap_share") {
  RequestChainDoc d;
  d.culprit = Culprit{.pid = 901, .comm = "hog", .share_kind = ShareKind::claimed, .share = 0.96};
  d.culprit.tracer_overhead_ms = 3.2;
  ChainRecord r = chain_record(d, "cpu_contention");
  CHECK(json::parse(r.doc)["culprit"] == json::parse(R"({"pid":901,"comm":"hog","share":0.96,"tracer_overhead_ms":3.2})"));
  CHECK(r.culprit_share == 0.96);
  d.culprit = Culprit{.pid = 900, .comm = "tar", .share_kind = ShareKind::overlap, .share = 0.5, .own_io = false};
  r = chain_record(d, "io_contention");
  CHECK(json::parse(r.doc)["culprit"] == json::parse(R"({"pid":900,"comm":"tar","overlap_share":0.5,"own_io":false})"));
  CHECK(r.culprit_share == 0.5);
}
