#include "diagnosis/chain_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace causeway {
namespace {

using json = nlohmann::json;

double round_to(double v, double scale) { return std::round(v * scale) / scale; }

json culprit_json(const Culprit& c) {
  json j = json::object();
  if (c.pid) j["pid"] = *c.pid;
  if (c.tid) j["tid"] = *c.tid;
  if (c.comm) j["comm"] = *c.comm;
  if (c.peer) j["peer"] = *c.peer;
  j[std::string(share_key(c.share_kind))] = c.share;
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
  return j;
}

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

}  // namespace

ChainRecord chain_record(const Doc& d, std::string_view cause) {
  ChainRecord r;
  r.id = d.id;
  r.from_ns = d.from_ns;
  r.to_ns = d.to_ns;
  r.severity = severity_name(d.severity);
  r.cause = cause;
  r.pid = d.pid;
  r.comm = d.comm;
  r.op = d.op;
  r.calls = d.calls;
  r.p50_us = round_to(d.p50_us, 10);
  r.p99_us = round_to(d.p99_us, 10);
  r.slow_share = round_to(d.slow_share, 1000);
  r.summary = d.summary;
  if (d.culprit) {
    r.culprit_pid = d.culprit->pid;
    r.culprit_comm = d.culprit->comm ? *d.culprit->comm : d.culprit->peer.value_or("");
    r.culprit_share = d.culprit->share;
  }

  json doc;
  doc["id"] = d.id;
  doc["severity"] = r.severity;
  doc["cause"] = r.cause;
  doc["summary"] = d.summary;
  doc["pid"] = d.pid;
  doc["comm"] = d.comm;
  if (d.tid) doc["tid"] = d.tid;
  if (d.host) doc["host"] = *d.host;
  if (d.host_pid) doc["host_pid"] = *d.host_pid;
  doc["op"] = d.op;
  doc["where"] = d.between ? "between_calls" : "in_call";
  doc["calls"] = d.calls;
  doc["p50_us"] = r.p50_us;
  doc["p99_us"] = r.p99_us;
  doc["slow_share"] = r.slow_share;
  doc["lost_us"] = d.lost_ns / 1000;
  doc["impact"] = round_to(d.impact, 10000);
  doc["window"] = {{"from_ns", d.from_ns}, {"to_ns", d.to_ns}};
  if (d.culprit) doc["culprit"] = culprit_json(*d.culprit);
  if (d.victims) doc["victims"] = victims_json(*d.victims);
  doc["evidence"] = d.evidence;
  json tl = json::array();
  for (const auto& t : d.timeline) tl.push_back({{"ts_ns", t.ts_ns}, {"layer", t.layer}, {"what", t.what}});
  doc["timeline"] = std::move(tl);
  doc["stack"] = d.frames;
  doc["recommendation"] = d.recommendation;
  // Traced strings are sanitized where they enter; a byte that is still not UTF-8 is replaced.
  r.doc = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

ChainRecord request_chain_record(const RequestChainDoc& d, std::string_view cause) {
  ChainRecord r;
  r.id = d.id;
  r.from_ns = d.from_ns;
  r.to_ns = d.to_ns;
  r.severity = severity_name(d.severity);
  r.cause = cause;
  r.pid = d.pid;
  r.comm = d.comm;
  r.op = d.op;
  r.calls = static_cast<int64_t>(d.requests);
  r.p50_us = d.p50_us;
  r.p99_us = d.p99_us;
  r.slow_share = d.share_time;
  const json& k = d.culprit;
  if (k.contains("pid") && k["pid"].is_number_integer()) r.culprit_pid = k["pid"].get<uint32_t>();
  if (k.contains("comm") && k["comm"].is_string()) r.culprit_comm = k["comm"].get<std::string>();
  if (k.contains("share") && k["share"].is_number()) r.culprit_share = k["share"].get<double>();
  r.summary = d.summary;

  json doc;
  doc["id"] = d.id;
  doc["level"] = "request";
  doc["severity"] = r.severity;
  doc["cause"] = r.cause;
  doc["metric"] = d.metric;
  doc["op"] = d.op;
  doc["pid"] = d.pid;
  doc["comm"] = d.comm;
  doc["window"] = {{"from_ns", d.from_ns}, {"to_ns", d.to_ns}};
  doc["requests"] = d.request_ids;
  doc["share_time"] = d.share_time;
  doc["impact"] = d.impact;
  doc["culprit"] = d.culprit;
  doc["recommendation"] = d.recommendation;
  doc["summary"] = d.summary;
  doc["evidence"] = d.evidence;
  r.doc = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

}  // namespace causeway
