#include "diagnosis/chains.h"

#include <algorithm>

#include "diagnosis/session_scope.h"
#include "common/untrusted_json.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {
// Longer than any string the correlator writes (evidence lines and recommendations are a few
// hundred bytes), so only a hostile document is cut.
constexpr size_t kChainStringMaxBytes = 4096;
}  // namespace

int severity_rank(std::string_view s) { return s == "HIGH" ? 3 : s == "MEDIUM" ? 2 : s == "LOW" ? 1 : 0; }

void rank_chains(nlohmann::json& chains) {
  std::stable_sort(chains.begin(), chains.end(), [](const nlohmann::json& x, const nlohmann::json& y) {
    const bool qx = x.value("level", "") == "request", qy = y.value("level", "") == "request";
    if (qx != qy) return qx;
    const int rx = severity_rank(x.value("severity", "")), ry = severity_rank(y.value("severity", ""));
    if (rx != ry) return rx > ry;
    return x.value("impact", 0.0) > y.value("impact", 0.0);
  });
}

Result<nlohmann::json> load_chains(sqlite3* db, const ChainQuery& query) {
  auto scope = resolve_scope(db, query.session_id, query.since_ns);
  if (!scope) return scope.error();
  int min_rank = query.min_severity ? severity_rank(*query.min_severity) : 0;
  if (query.min_severity && min_rank == 0)
    return make_error("usage", "severity must be HIGH, MEDIUM or LOW, not '" + *query.min_severity + "'");
  auto st = Statement::prepare(
      db,
      "SELECT doc, severity FROM chains WHERE session_id = ?1 AND to_ns >= ?2 AND from_ns <= ?3 "
      "AND (?4 IS NULL OR pid = ?4 OR culprit_pid = ?4) "
      "ORDER BY coalesce(json_extract(doc, '$.level'), '') != 'request', "  // request-level first
      "CASE severity WHEN 'HIGH' THEN 0 WHEN 'MEDIUM' THEN 1 ELSE 2 END, "
      "coalesce(json_extract(doc, '$.impact'), 0) DESC, id");  // impact: share of the window lost
  if (!st) return st.error();
  st->bind(1, scope->session_id);
  st->bind(2, scope->from_ns);
  st->bind(3, scope->to_ns);
  if (query.pid) st->bind(4, int64_t{*query.pid});
  else st->bind_null(4);
  nlohmann::json chains = nlohmann::json::array();
  size_t matched = 0;
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    if (severity_rank(st->col_text(1)) < min_rank) continue;
    ++matched;
    if (chains.size() >= query.limit) continue;
    auto doc = parse_untrusted_json(st->col_text(0));
    if (!doc) return make_error("db_corrupt", "a chain document in the trace DB is unusable: " + doc.error().message);
    // Stored by whoever wrote the DB: every string is sanitized before a person or a model
    // sees it (explain prints cause, op and evidence; get_causal_chains quotes them).
    chains.push_back(sanitize_json_strings(std::move(*doc), kChainStringMaxBytes));
  }
  if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db));
  return nlohmann::json{{"session_id", scope->session_id},
                        {"window", {{"from_ns", scope->from_ns}, {"to_ns", scope->to_ns}}},
                        {"chains", std::move(chains)},
                        {"total", matched},
                        {"truncated", matched > query.limit}};
}

}  // namespace causeway
