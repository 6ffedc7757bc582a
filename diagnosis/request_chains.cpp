#include "diagnosis/request_chains.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/sanitize.h"
#include "diagnosis/causes/request_cpu_contention.h"
#include "diagnosis/causes/request_nccl.h"
#include "diagnosis/causes/request_registry.h"
#include "diagnosis/request_latency.h"
#include "tracedb/chain_store.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::requests {
namespace {

using json = nlohmann::json;

int rank(const std::string& s) { return s == "HIGH" ? 3 : s == "MEDIUM" ? 2 : 1; }

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Each cause's own module says what to do (diagnosis/causes/request_registry.h).
const char* recommendation(const std::string& cause, const json& k) {
  const auto id = RequestCauses::find(cause);
  return id ? RequestCauses::recommendation(*id, k) : "";
}

const char* what(const std::string& metric) { return metric == "itl" ? "token gaps" : "time to first token"; }

std::string comm_of(sqlite3* db, int64_t session_id, const json& pid) {
  if (!pid.is_number_integer()) return "";
  auto st = Statement::prepare(db, "SELECT comm FROM processes WHERE session_id = ?1 AND pid = ?2");
  if (!st) return "";
  st->bind(1, session_id);
  st->bind(2, pid.get<int64_t>());
  return st->step() == SQLITE_ROW ? st->col_text(0) : "";
}

// What the engine's own metrics said, for the engine-state causes.
std::string engine_said(const json& k) {
  if (k.contains("waiting_max")) return "; up to " + fmt(k["waiting_max"].get<double>()) + " requests waiting in the engine's queue";
  if (k.contains("kv_cache_usage"))
    return "; KV cache " + fmt(k["kv_cache_usage"].get<double>() * 100) + "% full, " + fmt(k["preemptions"].get<double>()) +
           " preemptions";
  if (k.contains("peer"))
    return "; the server's writes to " + sanitize_untrusted(k["peer"].get<std::string>(), 64) + " waited on a full send buffer: " +
           std::to_string(k["eagain"].get<int64_t>()) + " EAGAIN, " + std::to_string(k["short_writes"].get<int64_t>()) +
           " short writes, " + std::to_string(k["blocked_writes"].get<int64_t>()) + " blocking writes, " +
           std::to_string(k["retransmits"].get<int64_t>()) + " TCP retransmits";
  return "";
}

// How prefill_interference was seen (diagnosis/request_causes.cpp): from the engine's forward
// passes, or, when they cannot be delimited, from the long requests' prompt bytes alone.
std::string prefill_evidence(const json& k) {
  if (k.value("basis", "") == "forward_pass")
    return "forward passes (the engine thread's launches up to the sync that waits for them): a " +
           fmt(k.value("pass_ms", 0.0)) + " ms pass against a median pass of " + fmt(k.value("median_pass_ms", 0.0)) +
           " ms, during the long requests' prefill";
  return "forward passes could not be delimited (no sync waits for the engine's launches, e.g. asynchronous scheduling, "
         "or no CUDA calls traced): inferred from the long requests' prompt bytes and their prefill time";
}

}  // namespace

const char* request_chain_severity(double tail_mean_ms, double median_ms, double share, uint64_t requests) {
  const double above = tail_mean_ms - median_ms;
  if (share >= 0.5 && above >= 20 && tail_mean_ms >= 2 * median_ms) return requests >= kHighMinRequests ? "HIGH" : "MEDIUM";
  if (share >= 0.2 && above >= 5 && tail_mean_ms >= 1.5 * median_ms) return "MEDIUM";
  return "LOW";
}

Result<json> request_chains(sqlite3* db, const RequestChainQuery& q) {
  json chains = json::array();
  int64_t session_id = 0;
  for (Metric m : {Metric::ttft, Metric::itl}) {
    RequestQuery rq;
    rq.session_id = q.session_id;
    rq.since_ns = q.since_ns;
    rq.pid = q.pid;
    rq.metric = m;
    rq.slowest = 0;
    rq.chain_detail = true;
    auto r = request_latency_json(db, rq);
    if (!r) return r.error();
    session_id = (*r)["session_id"].get<int64_t>();
    const json& tail = (*r)["requests"]["tail"];
    const uint64_t units = tail["units"].get<uint64_t>();
    if (units == 0) continue;
    const double median = tail["median_ms"].get<double>();
    const double tail_mean = median + tail["excess_ms"].get<double>() / static_cast<double>(units);
    const std::string metric = metric_name(m);
    for (const json& c : tail["causes"]) {
      const std::string cause = c["cause"].get<std::string>();
      const double share = c["share_time"].get<double>();
      const std::string sev = request_chain_severity(tail_mean, median, share, c["requests"].get<uint64_t>());
      const double lost_ms = share * tail["excess_ms"].get<double>();
      json k = c["culprit"];
      // The chain names the culprit process (the interface's culprit of queueing and
      // kv_cache_pressure is the engine's pid alone).
      if (!k.contains("comm") && k.contains("pid")) k["comm"] = comm_of(db, session_id, k["pid"]);
      // The victim is the server whose requests lost the most to the cause.
      const json server = c["server_pid"];
      json chain = {{"id", request_chain_id(session_id, m, cause)},
                    {"level", "request"},
                    {"severity", sev},
                    {"cause", cause},
                    {"metric", metric},
                    {"op", metric == "itl" ? "ITL (token gaps)" : "TTFT"},
                    {"pid", server},
                    {"comm", comm_of(db, session_id, server)},
                    {"window", {{"from_ns", c["from_ns"]}, {"to_ns", c["to_ns"]}}},
                    {"calls", c["requests"]},
                    {"p50_us", median * 1000},
                    {"p99_us", tail["threshold_ms"].is_null() ? 0.0 : tail["threshold_ms"].get<double>() * 1000},
                    {"requests", c["request_ids"]},
                    {"share_time", share},
                    {"impact", lost_ms / 1e3},
                    {"culprit", k},
                    {"recommendation", recommendation(cause, k)}};
      chain["summary"] = cause + " explains " + fmt(share * 100) + "% of the " + what(metric) + " tail's time above the median (" +
                         std::to_string(c["requests"].get<uint64_t>()) + " requests; the tail's " + std::to_string(units) +
                         (metric == "itl" ? " gaps" : " requests") + " average " + fmt(tail_mean) + " ms against a median of " +
                         fmt(median) + " ms" + engine_said(k) + ").";
      chain["evidence"] = json::array(
          {"tail: " + metric + " >= p" + fmt(tail["quantile"].get<double>() * 100) + " (" +
               fmt(tail["threshold_ms"].is_null() ? 0.0 : tail["threshold_ms"].get<double>()) + " ms), " +
               std::to_string(units) + " units, " + fmt(tail["excess_ms"].get<double>()) + " ms above the median in all",
           "unexplained share of the tail: " + fmt(tail["unexplained_share"].get<double>() * 100) + "%",
           "causeway requests --metric " + metric + " shows the slowest requests and their causes"});
      if (cause == "prefill_interference") chain["evidence"].push_back(prefill_evidence(k));
      for (const std::string& line : {cpu_contention_tracer_evidence(k), nccl_rank_evidence(k)})
        if (!line.empty()) chain["evidence"].push_back(line);
      chains.push_back(std::move(chain));
    }
  }
  std::stable_sort(chains.begin(), chains.end(), [](const json& a, const json& b) {
    const int ra = rank(a["severity"].get<std::string>()), rb = rank(b["severity"].get<std::string>());
    if (ra != rb) return ra > rb;
    return a["impact"].get<double>() > b["impact"].get<double>();
  });
  return json{{"session_id", session_id}, {"chains", std::move(chains)}};
}

Result<std::vector<ChainRecord>> request_chain_records(sqlite3* db, int64_t session_id) {
  RequestChainQuery q;
  q.session_id = session_id;
  auto r = request_chains(db, q);
  if (!r) return r.error();
  std::vector<ChainRecord> out;
  for (json& c : (*r)["chains"]) {
    ChainRecord rec;
    rec.id = c["id"].get<std::string>();
    rec.from_ns = c["window"]["from_ns"].get<int64_t>();
    rec.to_ns = c["window"]["to_ns"].get<int64_t>();
    rec.severity = c["severity"].get<std::string>();
    rec.cause = c["cause"].get<std::string>();
    if (c["pid"].is_number_integer()) rec.pid = c["pid"].get<uint32_t>();
    rec.comm = c["comm"].get<std::string>();
    rec.op = c["op"].get<std::string>();
    rec.calls = c["calls"].get<int64_t>();
    rec.p50_us = c["p50_us"].get<double>();
    rec.p99_us = c["p99_us"].get<double>();
    rec.slow_share = c["share_time"].get<double>();
    const json& k = c["culprit"];
    if (k.contains("pid") && k["pid"].is_number_integer()) rec.culprit_pid = k["pid"].get<uint32_t>();
    if (k.contains("comm") && k["comm"].is_string()) rec.culprit_comm = k["comm"].get<std::string>();
    if (k.contains("share") && k["share"].is_number()) rec.culprit_share = k["share"].get<double>();
    rec.summary = c["summary"].get<std::string>();
    // The row's columns, not the document: a reader would take "calls" for CUDA calls.
    for (const char* column : {"calls", "p50_us", "p99_us"}) c.erase(column);
    rec.doc = c.dump(-1, ' ', false, json::error_handler_t::replace);
    out.push_back(std::move(rec));
  }
  return out;
}

Result<size_t> store_request_chains(const std::string& db_path, int64_t session_id) {
  std::vector<ChainRecord> chains;
  {
    auto ro = open_read_only(db_path);
    if (!ro) return ro.error();
    auto r = request_chain_records(ro->get(), session_id);
    if (!r) return r.error();
    chains = std::move(*r);
  }
  auto rw = open_for_write(db_path);
  if (!rw) return rw.error();
  if (auto r = replace_request_chains(rw->get(), session_id, chains); !r) return r.error();
  close_writer_cleanly(*rw);
  return chains.size();
}

}  // namespace causeway::requests
