#include "diagnosis/request_chains.h"

#include <algorithm>
#include <string>

#include "diagnosis/causes/request_cause_util.h"
#include "diagnosis/causes/request_registry.h"
#include "diagnosis/chain_json.h"
#include "diagnosis/request_chain_view.h"
#include "diagnosis/request_latency.h"
#include "tracedb/chain_store.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::requests {
namespace {

// A chain that names one slowed request is an anecdote: at most MEDIUM (kHighMinRequests).
Severity request_severity(double tail_mean_ms, double median_ms, double share, uint64_t requests) {
  const double above = tail_mean_ms - median_ms;
  if (share >= 0.5 && above >= 20 && tail_mean_ms >= 2 * median_ms)
    return requests >= kHighMinRequests ? Severity::high : Severity::medium;
  if (share >= 0.2 && above >= 5 && tail_mean_ms >= 1.5 * median_ms) return Severity::medium;
  return Severity::low;
}

const char* metric_words(Metric m) { return m == Metric::itl ? "token gaps" : "time to first token"; }

std::string request_chain_comm(sqlite3* db, int64_t session_id, int64_t pid) {
  auto st = Statement::prepare(db, "SELECT comm FROM processes WHERE session_id = ?1 AND pid = ?2");
  if (!st) return "";
  st->bind(1, session_id);
  st->bind(2, pid);
  return st->step() == SQLITE_ROW ? st->col_text(0) : "";
}

// One chain per cause of one server's tail: typed here, written by the one serializer (chain_json.h).
void chains_of_tail(sqlite3* db, const RequestTail& tail, std::vector<std::pair<RequestChainDoc, RequestCause>>& out) {
  if (tail.units == 0) return;
  const double median = tail.median_ms;
  const double tail_mean = median + tail.excess_ms / static_cast<double>(tail.units);
  const std::string metric = metric_name(tail.metric);
  const double threshold = tail.threshold_ms.value_or(0.0);
  for (const TailCause& c : tail.causes) {
    const std::string cause(RequestCauses::name(c.cause));
    RequestChainDoc d;
    // The victim: the tail's server (every unit of a server's tail is its own).
    const uint32_t server = tail.server_pid.value_or(c.server_pid);
    d.id = request_chain_id(tail.session_id, server, tail.metric, cause);
    d.severity = request_severity(tail_mean, median, c.share_time, c.requests);
    d.metric = metric;
    d.op = tail.metric == Metric::itl ? "ITL (token gaps)" : "TTFT";
    d.pid = server;
    d.comm = request_chain_comm(db, tail.session_id, server);
    d.from_ns = c.from_ns;
    d.to_ns = c.to_ns;
    d.requests = c.requests;
    d.request_ids = c.request_ids;
    d.share_time = c.share_time;
    d.impact = c.share_time * tail.excess_ms / 1e3;
    d.p50_us = median * 1000;
    d.p99_us = threshold * 1000;
    d.culprit = c.culprit;
    // The chain names the culprit process (the interface's culprit of queueing and
    // kv_cache_pressure is the engine's pid alone).
    if (!d.culprit.comm && d.culprit.pid) d.culprit.comm = request_chain_comm(db, tail.session_id, *d.culprit.pid);
    d.recommendation = RequestCauses::recommendation(c.cause, d.culprit);
    // What the cause's own module adds (diagnosis/causes/request_<cause>.h chain_words).
    RequestChainWords words = RequestCauses::chain_words(c.cause, d.culprit);
    d.summary = cause + " explains " + one_decimal(c.share_time * 100) + "% of the " + metric_words(tail.metric) +
                " tail's time above the median (" + std::to_string(c.requests) + " requests; the tail's " +
                std::to_string(tail.units) + (tail.metric == Metric::itl ? " gaps" : " requests") + " average " +
                one_decimal(tail_mean) + " ms against a median of " + one_decimal(median) + " ms" + words.said + ").";
    d.evidence = {"tail: " + metric + " >= p" + one_decimal(tail.quantile * 100) + " (" + one_decimal(threshold) + " ms), " +
                      std::to_string(tail.units) + " units, " + one_decimal(tail.excess_ms) + " ms above the median in all",
                  "unexplained share of the tail: " + one_decimal(tail.unexplained_share * 100) + "%",
                  "causeway requests --metric " + metric + " shows the slowest requests and their causes"};
    for (std::string& line : words.evidence) d.evidence.push_back(std::move(line));
    out.emplace_back(std::move(d), c.cause);
  }
}

}  // namespace

const char* request_chain_severity(double tail_mean_ms, double median_ms, double share, uint64_t requests) {
  return severity_name(request_severity(tail_mean_ms, median_ms, share, requests)).data();
}

Result<std::vector<ChainRecord>> request_chain_records(sqlite3* db, int64_t session_id) {
  std::vector<std::pair<RequestChainDoc, RequestCause>> chains;
  for (Metric m : {Metric::ttft, Metric::itl}) {
    auto tails = request_tails_by_server(db, session_id, m);
    if (!tails) return tails.error();
    for (const RequestTail& tail : *tails) chains_of_tail(db, tail, chains);
  }
  // Most severe first, then by time lost.
  std::stable_sort(chains.begin(), chains.end(), [](const auto& a, const auto& b) {
    if (a.first.severity != b.first.severity) return a.first.severity > b.first.severity;
    return a.first.impact > b.first.impact;
  });
  std::vector<ChainRecord> out;
  for (const auto& [d, cause] : chains) out.push_back(chain_record(d, RequestCauses::name(cause)));
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
