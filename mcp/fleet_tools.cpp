#include "mcp/fleet_tools.h"

#include <chrono>
#include <cmath>
#include <set>

#include "diagnosis/chains.h"
#include "fleet/fleet_explain.h"
#include "fleet/fleet_requests.h"
#include "fleet/fleet_stats.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"
#include "sqlguard/clickhouse_guard.h"

namespace causeway::mcp {

namespace {

using namespace tools;

Result<ToolOutput> chains(fleet::ClickHouse& ch, const json& args, const Limits& limits) {
  fleet::FleetChainQuery q;
  auto since = duration_arg(args, "since");
  if (!since) return since.error();
  q.since_ns = *since;
  q.pid = pid_arg(args);
  q.min_severity = string_arg(args, "min_severity");
  if (!q.min_severity) q.min_severity = string_arg(args, "severity");
  auto offset = cursor_offset(args);
  if (!offset) return offset.error();
  auto doc = fleet::fleet_chains(ch, q);
  if (!doc) return doc.error();
  rank_chains((*doc)["chains"]);
  return chains_page((*doc)["chains"], string_arg(args, "cause"), *offset, static_cast<size_t>(args.value("limit", 10)), limits);
}

Result<ToolOutput> stats(fleet::ClickHouse& ch, const json& args, const Limits& limits) {
  auto query = stats_query(args);
  if (!query) return query.error();
  StatsQuery q = *query;
  const size_t top_n = q.top_n;
  q.top_n = 0;  // every op, ranked: the page is cut here so the total is known (as locally)
  auto offset = cursor_offset(args);
  if (!offset) return offset.error();
  auto r = fleet::fleet_stats(ch, q);
  if (!r) return r.error();
  fleet::FleetStats& s = *r;
  const size_t total = s.all.ops.size(), from = std::min(*offset, total), to = top_n ? std::min(total, from + top_n) : total;
  s.all.ops = std::vector<OpStats>(s.all.ops.begin() + static_cast<std::ptrdiff_t>(from), s.all.ops.begin() + static_cast<std::ptrdiff_t>(to));
  s.op_hosts = std::vector<std::string>(s.op_hosts.begin() + static_cast<std::ptrdiff_t>(from), s.op_hosts.begin() + static_cast<std::ptrdiff_t>(to));
  s.all.truncated = to < total;
  json d = fleet::fleet_stats_json(s);
  d["total_ops"] = total;
  if (to < total) d["next_cursor"] = "o:" + std::to_string(to);
  if (!d.contains("truncated")) d["truncated"] = false;
  fit_page(d, "ops", limits.structured_bytes(), *offset, d.contains("next_cursor"));
  std::string text = render_stats(d, *offset, limits.max_text_bytes);
  return ToolOutput{std::move(d), std::move(text)};
}

Result<ToolOutput> request_latency(fleet::ClickHouse& ch, const json& args, const Limits& limits) {
  auto q = request_query(args);
  if (!q) return q.error();
  auto r = fleet::fleet_requests(ch, *q);
  if (!r) return r.error();
  json d = std::move(*r);
  fit_json_budget(d["requests"], "slowest", limits.structured_bytes() / 2);
  std::string text = render_data_lines(fleet::fleet_requests_text(d), limits.max_text_bytes);
  return ToolOutput{std::move(d), std::move(text)};
}

// ClickHouse type -> the column_types vocabulary of run_sql (docs/MCP.md "Fleet mode").
std::string column_type(const std::string& ch_type) {
  if (ch_type == "Nothing" || ch_type == "Nullable(Nothing)") return "null";
  if (ch_type.find("Float") != std::string::npos || ch_type.find("Decimal") != std::string::npos) return "real";
  if (ch_type.find("Int") != std::string::npos && ch_type.find("Array") == std::string::npos &&
      ch_type.find("Interval") == std::string::npos && ch_type.find("Tuple") == std::string::npos)
    return "integer";
  return "text";
}

// ClickHouse quotes 64-bit integers in JSON; like the local run_sql, a column is numbers
// unless one of its values is beyond ±(2^53 − 1), then all of its integers are strings.
void exact_integers(json& rows, size_t col) {
  constexpr long double kExact = 9007199254740991.0L;
  for (const auto& row : rows)
    if (row[col].is_string()) {
      const std::string& v = row[col].get_ref<const std::string&>();
      char* end = nullptr;
      const long double x = std::strtold(v.c_str(), &end);
      if (v.empty() || *end || std::fabs(x) > kExact) return;
    }
  for (auto& row : rows)
    if (row[col].is_string()) row[col] = std::stoll(row[col].get<std::string>());
}

Result<ToolOutput> run_sql(fleet::ClickHouse& ch, const json& args, const Limits& limits) {
  auto stmt = sqlguard::clickhouse_select(args["query"].get<std::string>());
  if (!stmt) return stmt.error();
  auto offset = cursor_offset(args);
  if (!offset) return offset.error();
  const size_t max_rows = std::min<size_t>(static_cast<size_t>(args.value("limit", 100)), limits.max_rows * 5);
  // A subquery, so the rows fetched stay bounded whatever the model wrote (one more tells
  // whether more exist); the profile's max_execution_time and result limits still apply.
  const std::string sql = "SELECT * FROM (\n" + *stmt + "\n) LIMIT " + std::to_string(*offset) + ", " +
                          std::to_string(max_rows + 1) + "\nFORMAT JSONCompact";
  const auto t0 = std::chrono::steady_clock::now();
  auto body = ch.query_in_database(sql);
  if (!body) {
    Error e = body.error();
    if (e.code == "fleet_refused") e.code = "sql_error";
    return e;
  }
  const double elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // The store's answer is checked for the shape asked before any of it is used
  // (docs/SECURITY.md "A hostile fleet store"): meta names and types every column, and every
  // row of data has one value per column.
  json r = json::parse(*body, nullptr, false);
  if (r.is_discarded() || !r.is_object() || !r.contains("meta") || !r.contains("data") || !r["meta"].is_array() ||
      !r["data"].is_array())
    return make_error("sql_error", "ClickHouse answered something other than JSON rows (text that is not valid UTF-8? wrap such "
                                   "columns in hex())");
  for (const auto& m : r["meta"])
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string() || !m.contains("type") || !m["type"].is_string())
      return make_error("fleet_bad_answer", "the fleet store's answer names a column without a name and type: not ClickHouse?");
  for (const auto& row : r["data"])
    if (!row.is_array() || row.size() != r["meta"].size())
      return make_error("fleet_bad_answer", "the fleet store's answer has a row of " + std::to_string(row.is_array() ? row.size() : 0) +
                                                " values for " + std::to_string(r["meta"].size()) + " columns: not ClickHouse?");
  json d = {{"columns", json::array()}, {"column_types", json::array()}, {"rows", json::array()}, {"truncated", false},
            {"elapsed_ms", elapsed_ms}};
  for (const auto& m : r["meta"]) {
    d["columns"].push_back(m.value("name", ""));
    d["column_types"].push_back(column_type(m.value("type", "")));
  }
  size_t bytes = 0;
  for (auto& row : r["data"]) {
    bytes += row.dump(-1, ' ', false, json::error_handler_t::replace).size();
    if (d["rows"].size() == max_rows || bytes > limits.structured_bytes()) {
      d["truncated"] = true;
      d["next_cursor"] = "o:" + std::to_string(*offset + d["rows"].size());
      break;
    }
    d["rows"].push_back(std::move(row));
  }
  for (size_t c = 0; c < d["columns"].size(); ++c)
    if (d["column_types"][c] == "integer") exact_integers(d["rows"], c);
  d.erase("next_cursor");  // fit_page sets it from what fits
  fit_page(d, "rows", limits.structured_bytes(), *offset, d["truncated"].get<bool>());
  std::string text = render_rows(d, limits.max_text_bytes);
  return ToolOutput{std::move(d), std::move(text)};
}

using FleetHandler = Result<ToolOutput> (*)(fleet::ClickHouse&, const json&, const Limits&);

}  // namespace

void serve_from_fleet(ToolRegistry& tools, const fleet::Endpoint& endpoint) {
  const std::vector<std::pair<std::string, FleetHandler>> served = {
      {"get_causal_chains", chains}, {"get_trace_stats", stats}, {"get_request_latency", request_latency}, {"run_sql", run_sql}};
  std::set<std::string> names;
  for (const auto& [name, fn] : served) {
    names.insert(name);
    // One connection per call: calls run concurrently and a ClickHouse client is cheap.
    tools.set_handler(name, [endpoint, fn = fn](const json& args, ToolContext& ctx) -> Result<ToolOutput> {
      fleet::ClickHouse ch(endpoint);
      return fn(ch, args, ctx.config.limits);
    });
  }
  for (const auto& t : tools.tools()) {
    if (names.count(t.name())) continue;
    const std::string name = t.name();
    tools.set_handler(name, [name](const json&, ToolContext&) -> Result<ToolOutput> {
      return make_error("needs_host_db", name + " reads one host's trace DB, and this server reads the fleet store (mcp --fleet). "
                                                "Run `causeway mcp --db` on that host for it; from the fleet: get_causal_chains, "
                                                "get_trace_stats, get_request_latency and run_sql (ClickHouse SQL).");
    });
  }
}

}  // namespace causeway::mcp
