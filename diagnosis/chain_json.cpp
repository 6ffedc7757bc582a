#include "diagnosis/chain_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace causeway {

using json = nlohmann::json;

namespace {

void long_requests_json(json& j, const std::vector<LongRequest>& longs) {
  json ids = json::array(), entries = json::array();
  for (const LongRequest& l : longs) {
    ids.push_back(l.id);
    json e = {{"id", l.id}, {"tenant", l.tenant}};
    if (l.prompt_tokens) e["prompt_tokens"] = *l.prompt_tokens;
    else e["prompt_bytes"] = l.prompt_bytes;
    entries.push_back(std::move(e));
  }
  j["requests"] = std::move(ids);
  j["long_requests"] = std::move(entries);
}

// The request causes' keys (docs/INTERFACES.md "Inference requests").
void request_culprit_json(json& j, const Culprit& c) {
  if (c.nranks) j["nranks"] = *c.nranks;
  if (c.tracer_overhead_ms) j["tracer_overhead_ms"] = *c.tracer_overhead_ms;
  if (c.on_cpu_ms) j["on_cpu_ms"] = *c.on_cpu_ms;
  if (c.api_wait_ms) j["api_wait_ms"] = *c.api_wait_ms;
  if (c.send_waits) {
    j["eagain"] = c.send_waits->eagain;
    j["short_writes"] = c.send_waits->short_writes;
    j["blocked_writes"] = c.send_waits->blocked_writes;
  }
  if (c.kv_cache_usage) j["kv_cache_usage"] = *c.kv_cache_usage;
  if (c.preemptions) j["preemptions"] = *c.preemptions;
  if (c.waiting_max) j["waiting_max"] = *c.waiting_max;
  if (c.pages) j["pages"] = *c.pages;
  if (c.victim) j["victim"] = {{"pid", c.victim->pid}, {"comm", c.victim->comm}};
  if (c.long_requests) long_requests_json(j, *c.long_requests);
  if (c.basis) j["basis"] = prefill_basis_name(*c.basis);
  if (c.pass_ms) j["pass_ms"] = *c.pass_ms;
  if (c.median_pass_ms) j["median_pass_ms"] = *c.median_pass_ms;
}

}  // namespace

json culprit_json(const Culprit& c) {
  json j = json::object();
  if (c.pid) j["pid"] = *c.pid;
  if (c.tid) j["tid"] = *c.tid;
  if (c.comm) j["comm"] = *c.comm;
  if (c.peer) j["peer"] = *c.peer;
  if (c.share_kind != ShareKind::none) j[std::string(share_key(c.share_kind))] = c.share;
  if (c.cpu) j["cpu"] = *c.cpu;
  if (c.own_io) j["own_io"] = *c.own_io;
  if (c.oom_killed) j["oom_killed"] = *c.oom_killed;
  if (c.retransmits) j["retransmits"] = *c.retransmits;
  if (c.rank) j["rank"] = *c.rank;
  if (c.own_cause) j["own_cause"] = *c.own_cause;
  if (c.preempted_by)
    j["preempted_by"] = {{"pid", c.preempted_by->pid}, {"comm", c.preempted_by->comm}, {"share", c.preempted_by->share}};
  if (c.doing) j["doing"] = *c.doing;
  if (c.doing_share) j["doing_share"] = *c.doing_share;
  if (c.workers) {
    json w = json::array();
    for (const DataWorkerShare& x : *c.workers)
      w.push_back({{"pid", x.pid}, {"comm", x.comm}, {"wait_share", x.wait_share}, {"doing", x.doing}});
    j["workers"] = std::move(w);
  }
  if (c.io_bytes) j["io_bytes"] = *c.io_bytes;
  if (c.host) j["host"] = *c.host;
  if (c.host_pid) j["host_pid"] = *c.host_pid;
  if (c.rank_source) j["rank_source"] = *c.rank_source;
  if (c.waiting_hosts) {
    json w = json::array();
    for (const WaitingHost& h : *c.waiting_hosts) w.push_back({{"host", h.host}, {"pids", h.pids}});
    j["waiting_hosts"] = std::move(w);
  }
  if (c.tenant) {
    j["cgroup"] = c.tenant->cgroup;
    j["container"] = c.tenant->container ? json(*c.tenant->container) : json(nullptr);
    if (c.tenant->pod) j["pod"] = *c.tenant->pod;
  }
  request_culprit_json(j, c);
  return j;
}

namespace {

double round_to(double v, double scale) { return std::round(v * scale) / scale; }

json victims_json(const std::vector<StragglerVictim>& victims) {
  json a = json::array();
  for (const StragglerVictim& v : victims) {
    json j = {{"pid", v.pid}, {"comm", v.comm}, {"wait_us", v.wait_us}};
    if (v.host) j["host"] = *v.host;
    if (v.host_pid) j["host_pid"] = *v.host_pid;
    a.push_back(std::move(j));
  }
  return a;
}

// The row's columns every chain has, whatever its level (both docs name them alike).
template <typename ChainDoc>
ChainRecord chain_row(const ChainDoc& d, std::string_view cause) {
  ChainRecord r;
  r.id = d.id;
  r.from_ns = d.from_ns;
  r.to_ns = d.to_ns;
  r.severity = severity_name(d.severity);
  r.cause = cause;
  r.pid = d.pid;
  r.comm = d.comm;
  r.op = d.op;
  r.summary = d.summary;
  return r;
}

// The one path that writes a chain: the row `r` (its level's columns already set, rounded as
// the level writes them), its culprit's columns and key, and the document's shared keys, to
// which `doc` brings the level's own.
template <typename ChainDoc>
ChainRecord write_chain_record(ChainRecord r, const ChainDoc& d, const Culprit* culprit, double impact, json doc) {
  if (culprit) {
    r.culprit_pid = culprit->pid;
    r.culprit_comm = culprit->comm ? *culprit->comm : culprit->peer.value_or("");
    if (culprit->share_kind != ShareKind::none) r.culprit_share = culprit->share;
    doc["culprit"] = culprit_json(*culprit);
  }
  doc["id"] = r.id;
  doc["severity"] = r.severity;
  doc["cause"] = r.cause;
  doc["summary"] = r.summary;
  doc["pid"] = d.pid;
  doc["comm"] = r.comm;
  doc["op"] = r.op;
  doc["impact"] = impact;
  doc["window"] = {{"from_ns", r.from_ns}, {"to_ns", r.to_ns}};
  doc["evidence"] = d.evidence;
  doc["recommendation"] = d.recommendation;
  // Traced strings are sanitized where they enter; a byte that is still not UTF-8 is replaced.
  r.doc = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

}  // namespace

ChainRecord chain_record(const Doc& d, std::string_view cause) {
  ChainRecord r = chain_row(d, cause);
  r.calls = d.calls;
  r.p50_us = round_to(d.p50_us, 10);
  r.p99_us = round_to(d.p99_us, 10);
  r.slow_share = round_to(d.slow_share, 1000);
  json doc;
  if (d.tid) doc["tid"] = d.tid;
  if (d.host) doc["host"] = *d.host;
  if (d.host_pid) doc["host_pid"] = *d.host_pid;
  doc["where"] = d.between ? "between_calls" : "in_call";
  doc["calls"] = d.calls;
  doc["p50_us"] = r.p50_us;
  doc["p99_us"] = r.p99_us;
  doc["slow_share"] = r.slow_share;
  doc["lost_us"] = d.lost_ns / 1000;
  if (d.victims) doc["victims"] = victims_json(*d.victims);
  json tl = json::array();
  for (const auto& t : d.timeline) tl.push_back({{"ts_ns", t.ts_ns}, {"layer", t.layer}, {"what", t.what}});
  doc["timeline"] = std::move(tl);
  doc["stack"] = d.frames;
  return write_chain_record(std::move(r), d, d.culprit ? &*d.culprit : nullptr, round_to(d.impact, 10000), std::move(doc));
}

// The request level's numbers are rounded where the tail is typed (diagnosis/request_latency.cpp).
ChainRecord chain_record(const RequestChainDoc& d, std::string_view cause) {
  ChainRecord r = chain_row(d, cause);
  r.calls = static_cast<int64_t>(d.requests);
  r.p50_us = d.p50_us;
  r.p99_us = d.p99_us;
  r.slow_share = d.share_time;
  json doc;
  doc["level"] = "request";
  doc["metric"] = d.metric;
  doc["requests"] = d.request_ids;
  doc["share_time"] = d.share_time;
  return write_chain_record(std::move(r), d, &d.culprit, d.impact, std::move(doc));
}

}  // namespace causeway
