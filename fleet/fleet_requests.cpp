#include "fleet/fleet_requests.h"

#include <cmath>
#include <sstream>

#include "common/sanitize.h"
#include "fleet/fleet_query.h"
#include "fleet/fleet_schema.h"
#include "fleet/tsv.h"

namespace causeway::fleet {

namespace {

using json = nlohmann::json;

// Token gaps of a request in ns, from its itl_us JSON array ("[12,40]").
constexpr const char* kItlNs =
    "arrayMap(x -> toInt64(toFloat64OrZero(x) * 1000), arrayFilter(x -> x != '', splitByChar(',', "
    "replaceRegexpAll(itl_us, '[\\\\[\\\\] ]', ''))))";

// n, p50, p90, p99, max of a sorted array, nearest-rank like diagnosis/request_latency.cpp.
std::string summary_columns(const std::string& sorted) {
  std::string s = "length(" + sorted + ")";
  for (const char* q : {"0.5", "0.9", "0.99"})
    s += ", " + sorted + "[toUInt64(greatest(1, ceil(" + q + " * length(" + sorted + "))))]";
  return s + ", " + sorted + "[length(" + sorted + ")]";
}

std::string metric_columns() {
  return summary_columns("arraySort(groupArray(ttft_ns))") + ", " + summary_columns("arraySort(groupArrayArray(" + std::string(kItlNs) + "))") +
         ", " + summary_columns("arraySort(groupArray(e2e_ns))");
}

// host, server_pid, path, tenant, count(), then metric_columns().
std::vector<ColumnKind> requests_by_shape() {
  std::vector<ColumnKind> s{ColumnKind::Text, ColumnKind::Int, ColumnKind::Text, ColumnKind::Text};
  s.insert(s.end(), 16, ColumnKind::Int);
  return s;
}

double ms(int64_t ns) { return std::round(static_cast<double>(ns) / 1e3) / 1e3; }

json summary(const std::vector<std::string>& r, size_t at) {
  int64_t n = to_i64(r[at]);
  if (n == 0) return json{{"p50", nullptr}, {"p90", nullptr}, {"p99", nullptr}, {"max", nullptr}, {"n", 0}};
  return json{{"p50", ms(to_i64(r[at + 1]))}, {"p90", ms(to_i64(r[at + 2]))}, {"p99", ms(to_i64(r[at + 3]))},
              {"max", ms(to_i64(r[at + 4]))}, {"n", n}};
}

std::string where(const requests::RequestQuery& q, const FleetWindow& w) {
  std::string f = "start_ns BETWEEN " + std::to_string(w.from_ns) + " AND " + std::to_string(w.to_ns);
  if (q.pid) f += " AND server_pid = " + std::to_string(*q.pid);
  if (q.path) f += " AND path = " + sql_quote(*q.path);
  if (q.tenant) f += " AND tenant = " + sql_quote(*q.tenant);
  return f;
}

json opt_ms(const std::string& v) { return is_null(v) ? json(nullptr) : json(ms(to_i64(v))); }

std::string safe(const std::string& s, size_t n = 200) { return sanitize_untrusted(s, n); }

}  // namespace

Result<json> fleet_requests(ClickHouse& ch, const requests::RequestQuery& q) {
  if (q.quantile <= 0 || q.quantile >= 1) return make_error("invalid_argument", "--quantile must be in (0, 1)");
  if (auto r = check_fleet_schema(ch); !r) return r.error();
  auto w = fleet_request_window(ch, q.since_ns);
  if (!w) return w.error();
  const std::string t = ch.table("requests"), f = where(q, *w);
  // Counts, then three summaries of five numbers each (metric_columns()).
  // Then the API wait's (docs/INFERENCE.md "Arrival time").
  auto all = ch.select("SELECT count(), countIf(streamed != 0), countIf(status >= 400), " + metric_columns() + ", " +
                       summary_columns("arraySort(groupArrayIf(assumeNotNull(api_wait_ns), api_wait_ns IS NOT NULL))") + " FROM " + t + " WHERE " + f,
                       std::vector<ColumnKind>(23, ColumnKind::Int));
  if (!all) return all.error();
  if (all->size() != 1) return make_error("fleet_bad_answer", "the fleet store answered " + std::to_string(all->size()) +
                                                               " rows to a query of one (not ClickHouse?)");
  const auto& a = all->front();
  auto by_rows = ch.select("SELECT host, server_pid, path, tenant, count(), " + metric_columns() + " FROM " + t + " WHERE " + f +
                           " GROUP BY host, server_pid, path, tenant ORDER BY count() DESC, host, server_pid, path, tenant", requests_by_shape());
  if (!by_rows) return by_rows.error();
  auto comm_rows = ch.select("SELECT host, pid, any(comm) FROM " + ch.table("processes") + " FINAL WHERE (host, pid) IN "
                             "(SELECT DISTINCT host, server_pid FROM " + t + " WHERE " + f + ") GROUP BY host, pid", {ColumnKind::Text, ColumnKind::Int, ColumnKind::Text});
  if (!comm_rows) return comm_rows.error();
  std::map<std::pair<std::string, int64_t>, std::string> comms;
  for (const auto& r : *comm_rows)
    if (r.size() >= 3) comms[{r[0], to_i64(r[1])}] = r[2];
  json by = json::array();
  for (const auto& r : *by_rows) {
    if (r.size() < 20) continue;
    auto c = comms.find({r[0], to_i64(r[1])});
    by.push_back({{"host", safe(r[0], 128)}, {"server_pid", to_i64(r[1])}, {"comm", c == comms.end() ? "" : safe(c->second, 64)},
                  {"path", safe(r[2])}, {"tenant", safe(r[3])}, {"count", to_i64(r[4])}, {"ttft_ms", summary(r, 5)},
                  {"itl_ms", summary(r, 10)}, {"e2e_ms", summary(r, 15)}});
  }
  // The tail: how many units reach the quantile (requests; token gaps for itl).
  const char* metric = requests::metric_name(q.metric);
  const size_t base = q.metric == requests::Metric::ttft ? 3 : q.metric == requests::Metric::itl ? 8 : 13;
  const std::string qs = std::to_string(q.quantile);
  const std::string unit = q.metric == requests::Metric::ttft ? "ttft_ns" : q.metric == requests::Metric::e2e ? "e2e_ns" : "";
  std::string tail_sql = unit.empty()
      ? "SELECT count() FROM (SELECT arrayJoin(" + std::string(kItlNs) + ") AS g FROM " + t + " WHERE " + f + ") WHERE g >= "
      : "SELECT count() FROM " + t + " WHERE " + f + " AND " + unit + " >= ";
  const int64_t n_units = to_i64(a[base]);
  int64_t threshold = 0;
  if (n_units > 0) {
    auto k = ch.select("SELECT s[toUInt64(greatest(1, ceil(" + qs + " * length(s))))] FROM (SELECT arraySort(" +
                       (unit.empty() ? "groupArrayArray(" + std::string(kItlNs) + ")" : "groupArray(" + unit + ")") +
                       ") AS s FROM " + t + " WHERE " + f + ")", {ColumnKind::Int});
    if (!k) return k.error();
    threshold = k->empty() ? 0 : to_i64(k->front()[0]);
  }
  auto tail_n = ch.select(tail_sql + std::to_string(threshold), {ColumnKind::Int});
  if (!tail_n) return tail_n.error();
  json tail = {{"metric", metric}, {"quantile", q.quantile}, {"threshold_ms", n_units ? json(ms(threshold)) : json(nullptr)},
               {"units", n_units && !tail_n->empty() ? to_i64(tail_n->front()[0]) : 0}, {"unexplained_share", nullptr},
               {"causes", json::array()},
               {"note", "causes are found on each host from its scheduler data: run `causeway requests` there (docs/FLEET.md)"}};

  const std::string order = q.metric == requests::Metric::itl ? "itl_max_ns" : unit;
  auto slow = ch.select("SELECT host, request_id, method, path, tenant, start_ns, ttft_ns, itl_max_ns, e2e_ns, events, "
                        "prompt_bytes, status, server_pid, tls, read_end_ns, api_wait_ns FROM " + t + " WHERE " + f + " AND " + order +
                        " IS NOT NULL ORDER BY " + order + " DESC, host, start_ns LIMIT " + std::to_string(q.slowest),
                        {ColumnKind::Text, ColumnKind::Text, ColumnKind::Text, ColumnKind::Text, ColumnKind::Text, ColumnKind::Int,
                         ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int,
                         ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int});
  if (!slow) return slow.error();
  json slowest = json::array();
  for (const auto& r : *slow) {
    if (r.size() < 16) continue;
    slowest.push_back({{"host", safe(r[0], 128)}, {"request_id", safe(r[1], 128)}, {"method", safe(r[2], 16)}, {"path", safe(r[3])},
                       {"tenant", safe(r[4])}, {"start_ns", to_i64(r[5])}, {"ttft_ms", opt_ms(r[6])}, {"itl_max_ms", opt_ms(r[7])},
                       {"e2e_ms", opt_ms(r[8])}, {"events", to_i64(r[9])}, {"prompt_bytes", to_i64(r[10])},
                       {"status", to_i64(r[11])}, {"server_pid", to_i64(r[12])}, {"causes", json::array()},
                       {"tls", to_i64(r[13]) != 0}, {"read_end_ns", to_i64(r[14])}, {"api_wait_ms", opt_ms(r[15])}});
  }
  auto eng = ch.select("SELECT e.host, e.pid, e.engine, e.url, m.samples FROM (SELECT host, pid, engine, url FROM " +
                       ch.table("engines") + " FINAL) AS e ANY LEFT JOIN (SELECT host, pid, uniqExact(ts_ns) AS samples FROM " +
                       ch.table("engine_metrics") + " GROUP BY host, pid) AS m USING (host, pid) ORDER BY e.host, e.pid", {ColumnKind::Text, ColumnKind::Int, ColumnKind::Text, ColumnKind::Text, ColumnKind::Int});
  if (!eng) return eng.error();
  json engines = json::array();
  for (const auto& r : *eng)
    if (r.size() >= 5)
      engines.push_back({{"host", safe(r[0], 128)}, {"pid", to_i64(r[1])}, {"engine", safe(r[2], 16)}, {"url", safe(r[3])},
                         {"samples", to_i64(r[4])}});
  json reqs = {{"count", to_i64(a[0])}, {"streamed", to_i64(a[1])}, {"errors", to_i64(a[2])},
               {"window", {{"from_ns", w->from_ns}, {"to_ns", w->to_ns}}}, {"ttft_ms", summary(a, 3)}, {"itl_ms", summary(a, 8)},
               {"e2e_ms", summary(a, 13)}, {"api_wait_ms", summary(a, 18)}, {"by", by}, {"tail", tail}, {"slowest", slowest}};
  return json{{"requests", reqs}, {"engines", engines}};
}

std::string fleet_requests_text(const json& doc) {
  const json& r = doc["requests"];
  auto s = [](const json& m) {
    if (m["p50"].is_null()) return std::string("-");
    std::ostringstream o;
    o << "p50 " << m["p50"].get<double>() << " / p90 " << m["p90"].get<double>() << " / p99 " << m["p99"].get<double>() << " ms";
    return o.str();
  };
  std::ostringstream o;
  o << r["count"].get<int64_t>() << " requests on the fleet (" << r["streamed"].get<int64_t>() << " streamed, "
    << r["errors"].get<int64_t>() << " errors); TTFT " << s(r["ttft_ms"]) << ", ITL " << s(r["itl_ms"]) << ", E2E "
    << s(r["e2e_ms"]) << ", API wait " << s(r["api_wait_ms"]) << "\n";
  for (const auto& b : r["by"])
    o << "  " << b["host"].get<std::string>() << " pid " << b["server_pid"].get<int64_t>() << " (" << b["comm"].get<std::string>()
      << ") " << b["path"].get<std::string>() << " tenant " << b["tenant"].get<std::string>() << ": " << b["count"].get<int64_t>()
      << " requests, TTFT " << s(b["ttft_ms"]) << "\n";
  o << "slowest:\n";
  for (const auto& x : r["slowest"]) {
    o << "  " << x["host"].get<std::string>() << " " << x["request_id"].get<std::string>() << " " << x["method"].get<std::string>()
      << " " << x["path"].get<std::string>() << " status " << x["status"].get<int64_t>();
    if (!x["api_wait_ms"].is_null()) o << ", API wait " << x["api_wait_ms"].get<double>() << " ms";
    o << "\n";
  }
  o << "tail causes: " << r["tail"]["note"].get<std::string>() << "\n";
  return o.str();
}

}  // namespace causeway::fleet
