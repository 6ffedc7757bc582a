#include "fleet/fleet_explain.h"

#include <future>

#include "common/sanitize.h"
#include "common/untrusted_json.h"
#include "fleet/fleet_query.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_straggler.h"
#include "fleet/tsv.h"

namespace causeway::fleet {

namespace {

int severity_rank(const std::string& s) { return s == "HIGH" ? 3 : s == "MEDIUM" ? 2 : s == "LOW" ? 1 : 0; }

bool involves(const nlohmann::json& c, uint32_t pid) {
  auto is = [pid](const nlohmann::json& o) { return o.is_object() && o.contains("pid") && o["pid"].is_number() && o["pid"] == pid; };
  if (is(c) || (c.contains("culprit") && is(c["culprit"]))) return true;
  if (c.contains("victims") && c["victims"].is_array())
    for (const auto& v : c["victims"])
      if (is(v)) return true;
  return false;
}

}  // namespace

Result<nlohmann::json> fleet_hosts(ClickHouse& ch) {
  auto rows = ch.select("SELECT host, boot_id, session_id, session_start, system FROM " + ch.table("sessions") +
                        " FINAL ORDER BY host, session_start", {ColumnKind::Text, ColumnKind::Text, ColumnKind::Int, ColumnKind::Int, ColumnKind::Text});
  if (!rows) return rows.error();
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& r : *rows) {
    if (r.size() < 5) continue;
    nlohmann::json h = {{"host", sanitize_untrusted(r[0], 128)}, {"boot_id", sanitize_untrusted(r[1], 64)},
                        {"session_id", to_i64(r[2])}, {"session_start_ns", to_i64(r[3])}};
    // The system document came from the host: parsed with the untrusted-JSON limits.
    if (auto sys = parse_untrusted_json(r[4]); sys && sys->is_object()) h["system"] = *sys;
    hosts.push_back(std::move(h));
  }
  return hosts;
}

Result<nlohmann::json> fleet_chains(ClickHouse& ch, const FleetChainQuery& q) {
  // The queries that do not need each other's answers go at once, each on its own connection:
  // the answer then takes as long as the straggler query, not the sum of every round trip
  // (on a busy server a trivial query alone takes 0.1-0.3 s). Without --since the straggler
  // query reads the whole store and starts with the others; with it, it waits for the window.
  const Endpoint ep = ch.endpoint();
  auto own = [&ep](auto f) {
    return std::async(std::launch::async, [ep, f] {
      ClickHouse c(ep);
      return f(c);
    });
  };
  auto schema = own([](ClickHouse& c) { return check_fleet_schema(c); });
  auto window = own([since = q.since_ns](ClickHouse& c) { return fleet_window(c, since); });
  auto chain_rows =
      own([](ClickHouse& c) { return c.select("SELECT host, to_ns, doc FROM " + c.table("chains") + " FINAL ORDER BY host, id", {ColumnKind::Text, ColumnKind::Int, ColumnKind::Text}); });
  auto hosts = own([](ClickHouse& c) { return fleet_hosts(c); });
  std::future<Result<StragglerRows>> early;
  if (!q.since_ns) early = own([](ClickHouse& c) { return straggler_rows(c, std::nullopt); });
  if (auto r = schema.get(); !r) return r.error();
  auto w = window.get();
  if (!w) return w.error();
  auto srows = early.valid() ? early.get() : straggler_rows(ch, *w);
  if (!srows) return srows.error();
  auto stragglers = straggler_chains(ch, *srows, *w);
  if (!stragglers) return stragglers.error();
  auto rows = chain_rows.get();
  if (!rows) return rows.error();

  nlohmann::json chains = nlohmann::json::array();
  for (const auto& r : *rows) {
    if (r.size() < 3 || to_i64(r[1]) < w->from_ns) continue;
    auto doc = parse_untrusted_json(r[2]);
    if (!doc || !doc->is_object()) continue;
    const std::string host = sanitize_untrusted(r[0], 128);
    (*doc)["host"] = host;
    if (doc->contains("culprit") && (*doc)["culprit"].is_object() && !(*doc)["culprit"].contains("host"))
      (*doc)["culprit"]["host"] = host;
    chains.push_back(std::move(*doc));
  }
  for (auto& s : *stragglers) chains.push_back(std::move(s));

  nlohmann::json kept = nlohmann::json::array();
  for (auto& c : chains) {
    if (q.min_severity && severity_rank(c.value("severity", "")) < severity_rank(*q.min_severity)) continue;
    if (q.pid && !involves(c, *q.pid)) continue;
    kept.push_back(std::move(c));
  }
  auto host_list = hosts.get();
  if (!host_list) return host_list.error();
  return nlohmann::json{{"chains", kept}, {"total", kept.size()}, {"window", {{"from_ns", w->from_ns}, {"to_ns", w->to_ns}}},
                        {"hosts", *host_list}};
}

}  // namespace causeway::fleet
