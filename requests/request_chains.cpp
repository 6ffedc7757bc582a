#include "requests/request_chains.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "requests/latency.h"
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

const char* recommendation(const std::string& cause) {
  if (cause == "cpu_contention")
    return "Keep other work off the engine's CPUs: pin the engine core and its workers (taskset / cpuset) or move "
           "the culprit to other cores or a lower priority.";
  if (cause == "prefill_interference")
    return "Bound the prefill a decode step waits for: enable chunked prefill (vLLM --enable-chunked-prefill with a "
           "smaller --max-num-batched-tokens), or route long prompts to their own replica.";
  if (cause == "queueing")
    return "The engine is at capacity: add replicas, raise the batch limit if memory allows (vLLM --max-num-seqs), "
           "or shed load before the queue grows.";
  if (cause == "kv_cache_pressure")
    return "Give the KV cache more room: raise --gpu-memory-utilization, lower --max-num-seqs or --max-model-len, "
           "or quantize the KV cache (--kv-cache-dtype fp8).";
  return "";
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
  return "";
}

}  // namespace

const char* request_chain_severity(double tail_mean_ms, double median_ms, double share) {
  const double above = tail_mean_ms - median_ms;
  if (share >= 0.5 && above >= 20 && tail_mean_ms >= 2 * median_ms) return "HIGH";
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
      const std::string sev = request_chain_severity(tail_mean, median, share);
      const double lost_ms = share * tail["excess_ms"].get<double>();
      json k = c["culprit"];
      // The chain names the culprit process (the interface's culprit of queueing and
      // kv_cache_pressure is the engine's pid alone).
      if (!k.contains("comm") && k.contains("pid")) k["comm"] = comm_of(db, session_id, k["pid"]);
      json chain = {{"id", "req-" + std::to_string(session_id) + "-" + metric + "-" + cause},
                    {"level", "request"},
                    {"severity", sev},
                    {"cause", cause},
                    {"metric", metric},
                    {"op", metric == "itl" ? "ITL (token gaps)" : "TTFT"},
                    {"pid", k.contains("pid") ? k["pid"] : json(nullptr)},
                    {"comm", "inference server"},
                    {"requests", c["request_ids"]},
                    {"share_time", share},
                    {"impact", lost_ms / 1e3},
                    {"culprit", k},
                    {"recommendation", recommendation(cause)}};
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

}  // namespace causeway::requests
