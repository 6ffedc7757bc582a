#include "diagnosis/request_latency.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "common/argmax.h"
#include "diagnosis/session_scope.h"
#include "diagnosis/chain_json.h"
#include "diagnosis/chain_text.h"
#include "common/sanitize.h"
#include "diagnosis/causes/request_nccl.h"
#include "diagnosis/causes/request_registry.h"
#include "diagnosis/request_causes.h"
#include "metrics/genai_semconv.h"
#include "tracedb/chain_store.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::requests {
namespace {

using json = nlohmann::json;

struct Row {
  std::string id, method, path, tenant, peer;
  uint32_t pid = 0;
  int32_t fd = -1;
  int64_t start_ns = 0, end_ns = 0, first_out_ns = 0;
  std::optional<int64_t> ttft, e2e, itl_max;
  std::vector<int64_t> gaps_ns;
  int status = 0;
  bool streamed = false;
  bool complete = false;
  uint32_t events = 0;
  uint64_t prompt_bytes = 0;
  // Migration 8 (docs/INFERENCE.md "Model and tokens", "Errors"); defaults on older DBs.
  bool tls = false;
  std::optional<std::string> model;
  std::optional<int64_t> input_tokens, output_tokens, tpot;
  std::string end_reason = "complete";
  // Migration 9 (docs/INFERENCE.md "Arrival time"): the read that completed the request and
  // the wait from its last byte's arrival to it; read_end_ns = end_ns on older DBs.
  int64_t read_end_ns = 0;
  std::optional<int64_t> api_wait;
  bool aborted() const { return end_reason == "aborted"; }
  bool disconnected() const { return end_reason == "disconnected"; }
};

// Nearest-rank quantile of sorted values.
double quantile_of(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  k = std::clamp<size_t>(k, 1, sorted.size());
  return static_cast<double>(sorted[k - 1]);
}

double ms(double ns) { return std::round(ns / 1e3) / 1e3; }

json summary(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return json{{"p50", nullptr}, {"p90", nullptr}, {"p99", nullptr}, {"max", nullptr}, {"n", 0}};
  return json{{"p50", ms(quantile_of(v, 0.5))}, {"p90", ms(quantile_of(v, 0.9))}, {"p99", ms(quantile_of(v, 0.99))},
              {"max", ms(static_cast<double>(v.back()))}, {"n", v.size()}};
}

struct Values {
  std::vector<int64_t> ttft, itl, e2e, tpot, api_wait;
  uint64_t errors = 0, aborted = 0, disconnected = 0;
  void add(const Row& r) {
    if (r.api_wait) api_wait.push_back(*r.api_wait);
    errors += r.status >= 400;
    aborted += r.aborted();
    disconnected += r.disconnected();
    if (r.tpot) tpot.push_back(*r.tpot);
    if (r.ttft) ttft.push_back(*r.ttft);
    if (r.e2e) e2e.push_back(*r.e2e);
    itl.insert(itl.end(), r.gaps_ns.begin(), r.gaps_ns.end());
  }
};

std::optional<int64_t> metric_of(const Row& r, Metric m) {
  switch (m) {
    case Metric::ttft: return r.ttft;
    case Metric::e2e: return r.e2e;
    case Metric::itl: return r.itl_max;
  }
  return std::nullopt;
}

// The slow part of a request for a metric: TTFT from its end, E2E from its start, ITL its
// longest gap (token times rebuilt from the first token and the gaps).
std::pair<int64_t, int64_t> slow_part(const Row& r, Metric m) {
  switch (m) {
    case Metric::ttft: return {r.end_ns, r.end_ns + r.ttft.value_or(0)};
    case Metric::e2e: return {r.start_ns, r.start_ns + r.e2e.value_or(0)};
    case Metric::itl: {
      int64_t t = r.first_out_ns, best = -1, from = 0;
      for (int64_t g : r.gaps_ns) {
        if (g > best) best = g, from = t;
        t += g;
      }
      return {from, from + std::max<int64_t>(best, 0)};
    }
  }
  return {0, 0};
}

// A unit of the tail: a request (ttft, e2e) or one token gap (itl).
struct Unit {
  const Row* row;
  int64_t from, to;
};

// Tail units explained one by one; more than this (a long ITL tail) are sampled largest first.
constexpr size_t kMaxExplainedUnits = 200;

bool has_table(sqlite3* db, const char* name) {
  auto st = Statement::prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
  if (!st) return false;
  st->bind(1, std::string_view(name));
  return st->step() == SQLITE_ROW;
}

bool has_column(sqlite3* db, const char* table, const char* column) {
  auto st = Statement::prepare(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2");
  if (!st) return false;
  st->bind(1, std::string_view(table));
  st->bind(2, std::string_view(column));
  return st->step() == SQLITE_ROW;
}

// Strings from requests are stored as the client sent them; they leave here as valid UTF-8
// (docs/SECURITY.md "Bytes from requests"), so every answer built on the rows can dump them.
std::string request_text(const Statement& st, int col) { return repair_utf8(st.col_text(col)); }

// Every request the session recorded: the evidence the causes are searched in, whatever the
// query judges (docs/INFERENCE.md "Causes keyed to requests": another tenant's long prompt
// stalls this tenant's streams though a --tenant filter hides its row).
Result<std::vector<Row>> load(sqlite3* db, int64_t session_id) {
  std::vector<Row> rows;
  // A DB from before migration 8 (readers never migrate): its requests have no model or
  // tokens, and an incomplete one was a disconnect.
  const char* v8 = has_column(db, "requests", "end_reason")
                       ? "tls, model, input_tokens, output_tokens, tpot_ns, end_reason"
                       : "0, NULL, NULL, NULL, NULL, CASE WHEN complete THEN 'complete' ELSE 'disconnected' END";
  auto st = Statement::prepare(
      db,
      std::string("SELECT request_id, method, path, tenant, server_pid, start_ns, ttft_ns, e2e_ns, itl_max_ns, itl_us, status, "
      "streamed, events, prompt_bytes, end_ns, coalesce(first_token_ns, first_byte_ns, 0), fd, peer, complete, ") + v8 +
      ", " + std::string(has_column(db, "requests", "api_wait_ns") ? "coalesce(read_end_ns, end_ns), api_wait_ns" : "end_ns, NULL") +
      " FROM requests WHERE session_id = ?1 ORDER BY start_ns");
  if (!st) return st.error();
  st->bind(1, session_id);
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    Row r;
    r.id = request_text(*st, 0);
    r.method = request_text(*st, 1);
    r.path = request_text(*st, 2);
    r.tenant = request_text(*st, 3);
    r.pid = static_cast<uint32_t>(st->col_int(4));
    r.start_ns = st->col_int(5);
    if (!st->col_null(6)) r.ttft = st->col_int(6);
    if (!st->col_null(7)) r.e2e = st->col_int(7);
    if (!st->col_null(8)) r.itl_max = st->col_int(8);
    if (!st->col_null(9)) {
      const json gaps = json::parse(st->col_text(9), nullptr, false);
      if (gaps.is_array())
        for (const auto& g : gaps)
          if (g.is_number_integer()) r.gaps_ns.push_back(g.get<int64_t>() * 1000);
    }
    r.status = static_cast<int>(st->col_int(10));
    r.streamed = st->col_int(11) != 0;
    r.events = static_cast<uint32_t>(st->col_int(12));
    r.prompt_bytes = static_cast<uint64_t>(st->col_int(13));
    r.end_ns = st->col_int(14);
    r.first_out_ns = st->col_int(15);
    r.fd = static_cast<int32_t>(st->col_int(16));
    r.peer = request_text(*st, 17);
    r.complete = st->col_int(18) != 0;
    r.tls = st->col_int(19) != 0;
    if (!st->col_null(20)) r.model = request_text(*st, 20);
    if (!st->col_null(21)) r.input_tokens = st->col_int(21);
    if (!st->col_null(22)) r.output_tokens = st->col_int(22);
    if (!st->col_null(23)) r.tpot = st->col_int(23);
    r.end_reason = request_text(*st, 24);
    r.read_end_ns = st->col_int(25);
    if (!st->col_null(26)) r.api_wait = st->col_int(26);
    rows.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return make_error("db_read", std::string("reading requests failed: ") + sqlite3_errmsg(db));
  return rows;
}

// The requests the query judges and reports: its window (--since), server, path and tenant.
// `q`'s --path / --tenant already repaired like the rows' strings (request_text), so a filter
// of the stored bytes finds them.
bool judged(const Row& r, const SessionScope& scope, const RequestQuery& q) {
  const int64_t to = scope.live ? INT64_MAX : std::max(scope.to_ns, scope.from_ns);
  return r.start_ns >= scope.from_ns && r.start_ns <= to && (!q.pid || r.pid == *q.pid) && (!q.path || r.path == *q.path) &&
         (!q.tenant || r.tenant == *q.tenant);
}

std::map<uint32_t, std::string> comms(sqlite3* db, int64_t session_id) {
  std::map<uint32_t, std::string> out;
  auto st = Statement::prepare(db, "SELECT pid, comm FROM processes WHERE session_id = ?1");
  if (!st) return out;
  st->bind(1, session_id);
  while (st->step() == SQLITE_ROW) out[static_cast<uint32_t>(st->col_int(0))] = st->col_text(1);
  return out;
}

json engines(sqlite3* db, int64_t session_id) {
  json out = json::array();
  if (!has_table(db, "engines")) return out;
  auto st = Statement::prepare(db,
                               "SELECT e.pid, e.engine, e.url, (SELECT count(DISTINCT ts_ns) FROM engine_metrics m "
                               "WHERE m.session_id = e.session_id AND m.pid = e.pid) FROM engines e WHERE e.session_id = ?1 "
                               "ORDER BY e.pid");
  if (!st) return out;
  st->bind(1, session_id);
  while (st->step() == SQLITE_ROW)
    out.push_back({{"pid", st->col_int(0)}, {"engine", st->col_text(1)}, {"url", st->col_text(2)}, {"samples", st->col_int(3)}});
  return out;
}

// The stored request-level chains of the session (diagnosis/request_chains.h), each of one
// server's tail: a cause points at the chain of that cause and metric of the server that
// lost the request's time (a slowest request's own server; for the tail, the server that lost
// the most to the cause); E2E, which has no chains of its own, at the TTFT chain of the cause,
// else the ITL one. None stored for that server: null. A DB written before chains were per
// server has one chain per metric and cause for all its servers, "s<session>-req-<metric>-<cause>":
// a cause points at that one there.
class ChainIds {
 public:
  ChainIds(sqlite3* db, int64_t session_id, Metric m) : session_id_(session_id), metric_(m) {
    if (!has_table(db, "chains")) return;
    auto st = Statement::prepare(db, "SELECT id FROM chains WHERE session_id = ?1 AND substr(id, 1, length(?2)) = ?2");
    if (!st) return;
    st->bind(1, session_id);
    st->bind(2, request_chain_id_prefix(session_id));
    while (st->step() == SQLITE_ROW) ids_.insert(st->col_text(0));
  }
  json operator()(uint32_t server_pid, const std::string& cause) const {
    std::vector<Metric> order = {metric_};
    if (metric_ == Metric::e2e) order = {Metric::ttft, Metric::itl};
    for (Metric m : order) {
      if (auto id = request_chain_id(session_id_, server_pid, m, cause); ids_.count(id)) return id;
      if (auto id = request_chain_id_prefix(session_id_) + metric_name(m) + "-" + cause; ids_.count(id)) return id;
    }
    return nullptr;
  }

 private:
  int64_t session_id_;
  Metric metric_;
  std::set<std::string> ids_;
};

json request_causes(CauseFinder& finder, const ChainIds& chain_ids, const Row& r, Metric m, double median) {
  json out = json::array();
  auto [from, to] = slow_part(r, m);
  const double excess = std::max(0.0, static_cast<double>(to - from) - median);
  for (const CauseClaim& c : finder.explain(r.id, r.pid, from, to, excess))
    out.push_back({{"cause", RequestCauses::name(c.cause)}, {"lost_ms", ms(c.lost_ns)}, {"culprit", culprit_json(c.culprit)},
                   {"chain_id", chain_ids(r.pid, std::string(RequestCauses::name(c.cause)))}});
  return out;
}

// The "semconv" object (docs/METRICS.md "The same names in requests --json"): what /metrics'
// request families hold for these rows, under their Prometheus names, by the one per-request
// rule of metrics/genai_semconv.h; the time lost is the asked metric's tail, as in "tail".
json semconv_json(const std::vector<Row>& rows, Metric m, const std::map<std::string, double>& lost_ns, double excess_ns) {
  std::vector<int64_t> ttft, tpot, duration;
  uint64_t errors = 0, aborts = 0, disconnects = 0;
  for (const Row& r : rows) {
    int64_t decode_ns = 0;
    for (int64_t g : r.gaps_ns) decode_ns += g;
    const genai::Observation o = genai::observe_request(
        r.status, r.end_reason, r.ttft, r.e2e, decode_ns,
        genai::output_tokens_of(r.output_tokens ? std::optional<uint64_t>(static_cast<uint64_t>(*r.output_tokens)) : std::nullopt,
                                r.streamed, r.events),
        r.tpot);
    errors += o.outcome == genai::Outcome::error;
    aborts += o.outcome == genai::Outcome::aborted;
    disconnects += o.outcome == genai::Outcome::disconnected;
    if (o.ttft_ns) ttft.push_back(*o.ttft_ns);
    if (o.tpot_ns) tpot.push_back(*o.tpot_ns);
    if (o.duration_ns) duration.push_back(*o.duration_ns);
  }
  auto histogram = [](const char* otel_name, std::vector<int64_t> v, const auto& bounds) {
    std::sort(v.begin(), v.end());
    int64_t sum = 0;
    for (int64_t x : v) sum += x;
    json h = {{"otel_name", otel_name}, {"unit", "s"}, {"count", v.size()}, {"sum", static_cast<double>(sum) / 1e9}};
    for (auto [key, q] : {std::pair{"p50", 0.5}, std::pair{"p99", 0.99}}) {
      if (v.empty()) {
        h[key] = nullptr;
        continue;
      }
      const double x = quantile_of(v, q);
      h[key] = x / 1e9;
      // The bucket a histogram_quantile() over /metrics lands in: its upper bound (null: +Inf).
      const size_t b = genai::bucket_index(bounds, static_cast<int64_t>(x));
      h[std::string(key) + "_le"] = b < bounds.size() ? json(bounds[b]) : json(nullptr);
    }
    return h;
  };
  json lost = json::object();
  double explained = 0;
  for (const auto& [cause, ns] : lost_ns) {
    // Each cause is capped at the tail's excess, as its share_time is at 1.
    lost[cause] = std::min(ns, excess_ns) / 1e9;
    explained += excess_ns > 0 ? std::min(1.0, ns / excess_ns) : 0;
  }
  if (excess_ns > 0) lost["unexplained"] = std::max(0.0, 1.0 - explained) * excess_ns / 1e9;
  return json{{"conventions", "OpenTelemetry GenAI semantic conventions, status Development"},
              {genai::kTtftName, histogram(genai::kTtftOtelName, std::move(ttft), genai::kTtftBuckets)},
              {genai::kTpotName, histogram(genai::kTpotOtelName, std::move(tpot), genai::kTpotBuckets)},
              {genai::kDurationName, histogram(genai::kDurationOtelName, std::move(duration), genai::kDurationBuckets)},
              {genai::kRequestsName, rows.size()},
              {genai::kErrorsName, errors},
              {genai::kAbortsName, aborts},
              {genai::kDisconnectsName, disconnects},
              {genai::kTimeLostName, {{"metric", metric_name(m)}, {"causes", std::move(lost)}}}};
}

// The per-request fields of docs/INTERFACES.md "Inference requests (round 4)" beside the
// round-3 ones; `end` says how the exchange ended (complete, aborted, disconnected, lost,
// trace_end).
void add_request_fields(json& o, const Row& r) {
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  o["peer"] = r.peer;
  o["tls"] = r.tls;
  o["model"] = opt(r.model);
  o["input_tokens"] = opt(r.input_tokens);
  o["output_tokens"] = opt(r.output_tokens);
  o["tpot_ms"] = r.tpot ? json(ms(static_cast<double>(*r.tpot))) : json(nullptr);
  o["end"] = r.end_reason;
  o["read_end_ns"] = r.read_end_ns;
  o["api_wait_ms"] = r.api_wait ? json(ms(static_cast<double>(*r.api_wait))) : json(nullptr);
}

// Requests that failed (status >= 400, aborted or disconnected), in time order, `limit` at most.
json failed_requests(const std::vector<Row>& rows, size_t limit) {
  json out = json::array();
  for (const Row& r : rows) {
    if (out.size() >= limit) break;
    if (r.status < 400 && !r.aborted() && !r.disconnected()) continue;
    out.push_back({{"request_id", r.id}, {"method", r.method}, {"path", r.path}, {"tenant", r.tenant},
                   {"start_ns", r.start_ns}, {"status", r.status}, {"server_pid", r.pid},
                   {"e2e_ms", r.e2e ? json(ms(static_cast<double>(*r.e2e))) : json(nullptr)}});
    add_request_fields(out.back(), r);
  }
  return out;
}

}  // namespace

std::optional<Metric> metric_from(std::string_view name) {
  if (name == "ttft") return Metric::ttft;
  if (name == "itl") return Metric::itl;
  if (name == "e2e") return Metric::e2e;
  return std::nullopt;
}

std::string request_chain_id(int64_t session_id, uint32_t server_pid, Metric m, std::string_view cause) {
  return request_chain_id_prefix(session_id) + std::to_string(server_pid) + "-" + metric_name(m) + "-" + std::string(cause);
}

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::ttft: return "ttft";
    case Metric::itl: return "itl";
    case Metric::e2e: return "e2e";
  }
  return "ttft";
}

namespace {

// The rows a query judges, and every row of its session (the evidence).
struct JudgedRequestRows {
  SessionScope scope;
  std::vector<Row> evidence, rows;
};

Result<JudgedRequestRows> judge_request_rows(sqlite3* db, const RequestQuery& q) {
  if (!(q.quantile > 0 && q.quantile < 1)) return make_error("invalid_argument", "quantile must be in (0, 1), e.g. 0.99");
  auto scope = resolve_scope(db, q.session_id, q.since_ns);
  if (!scope) return scope.error();
  JudgedRequestRows j{*scope, {}, {}};
  if (has_table(db, "requests")) {
    auto r = load(db, scope->session_id);
    if (!r) return r.error();
    j.evidence = std::move(*r);
  }
  RequestQuery filter = q;  // repaired once, not per row
  if (filter.path) filter.path = repair_utf8(*filter.path);
  if (filter.tenant) filter.tenant = repair_utf8(*filter.tenant);
  for (const Row& r : j.evidence)
    if (judged(r, j.scope, filter)) j.rows.push_back(r);
  return j;
}

CauseFinder request_finder_over(sqlite3* db, const JudgedRequestRows& j) {
  std::vector<RequestSpan> spans;
  for (const Row& r : j.evidence)
    spans.push_back({r.id, r.pid, r.end_ns, r.first_out_ns, r.prompt_bytes, r.start_ns, r.e2e ? r.start_ns + *r.e2e : r.end_ns, r.fd, r.peer, r.tenant,
                     r.read_end_ns,
                     r.input_tokens && *r.input_tokens >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(*r.input_tokens)) : std::nullopt});
  return CauseFinder(db, j.scope.session_id, std::move(spans));
}

// The tail, typed, with the unrounded numbers the rest of the answer uses.
struct RequestTailWork {
  RequestTail tail;
  double excess_ns = 0;
  double median_ns = 0;
};

// The tail: units at or above the quantile (requests; token gaps for itl), each explained
// by what the engine did during its slow part (diagnosis/request_causes.h); share_time is a
// cause's share of the tail's time above the median.
RequestTailWork request_tail_work(const std::vector<Row>& rows, const RequestQuery& q, CauseFinder& finder, int64_t session_id) {
  Values all;
  for (const Row& r : rows) all.add(r);
  std::vector<int64_t> units_v = q.metric == Metric::ttft ? all.ttft : q.metric == Metric::itl ? all.itl : all.e2e;
  std::sort(units_v.begin(), units_v.end());
  const double threshold = quantile_of(units_v, q.quantile);
  const double median = quantile_of(units_v, 0.5);
  std::vector<Unit> units;
  for (const Row& r : rows) {
    if (q.metric == Metric::itl) {
      int64_t t = r.first_out_ns;
      for (int64_t g : r.gaps_ns) {
        if (!units_v.empty() && static_cast<double>(g) >= threshold) units.push_back({&r, t, t + g});
        t += g;
      }
    } else if (auto v = metric_of(r, q.metric); v && static_cast<double>(*v) >= threshold) {
      auto [from, to] = slow_part(r, q.metric);
      units.push_back({&r, from, to});
    }
  }
  const size_t tail_units = units.size();
  std::sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) { return a.to - a.from > b.to - b.from; });
  if (units.size() > kMaxExplainedUnits) units.resize(kMaxExplainedUnits);
  struct Agg {
    RequestCause cause = RequestCause::cpu_contention;
    double lost = 0;
    std::set<std::string> requests;
    std::map<std::string, double> lost_by_request;
    std::map<uint32_t, double> lost_by_server;
    int64_t from_ns = INT64_MAX, to_ns = INT64_MIN;
    // Per culprit (its pid, else the whole culprit): the time its claims took, and its
    // culprit from its largest claim. The tail's culprit is the one that took the most over
    // all the tail's units, not the one behind the single largest claim (a process that
    // stole 20 ms once must not outrank a hog that stole 3 ms in each of 40 gaps).
    // The culprit's words come from its largest claim, one found on a gap's path first (a late
    // rank's cpu_contention names its victim: "Claims on one gap").
    std::map<std::string, std::pair<double, std::pair<bool, double>>> by_culprit;  // key -> (lost, largest claim)
    std::map<std::string, Culprit> culprit_of;
  };
  std::map<std::string, Agg> by_cause;  // by name: the answer lists equal shares in name order
  double excess_total = 0;
  for (const Unit& u : units) {
    const double excess = std::max(0.0, static_cast<double>(u.to - u.from) - median);
    excess_total += excess;
    for (const CauseClaim& c : finder.explain(u.row->id, u.row->pid, u.from, u.to, excess)) {
      Agg& a = by_cause[std::string(RequestCauses::name(c.cause))];
      a.cause = c.cause;
      a.lost += c.lost_ns;
      a.requests.insert(u.row->id);
      a.lost_by_request[u.row->id] += c.lost_ns;
      a.lost_by_server[u.row->pid] += c.lost_ns;
      a.from_ns = std::min(a.from_ns, u.from);
      a.to_ns = std::max(a.to_ns, u.to);
      const std::string key = c.culprit.pid ? std::to_string(*c.culprit.pid) : culprit_json(c.culprit).dump();
      auto& [culprit_lost, largest] = a.by_culprit[key];
      culprit_lost += c.lost_ns;
      if (const std::pair<bool, double> rank{c.tier.has_value(), c.lost_ns}; rank > largest) largest = rank, a.culprit_of[key] = c.culprit;
    }
  }
  RequestTailWork out;
  RequestTail& t = out.tail;
  t.session_id = session_id;
  t.metric = q.metric;
  t.quantile = q.quantile;
  if (!units_v.empty()) t.threshold_ms = ms(threshold);
  t.units = tail_units;
  double explained = 0;
  for (const auto& [cause, a] : by_cause) {
    const double share = excess_total > 0 ? std::min(1.0, a.lost / excess_total) : 0;
    explained += share;
    TailCause c;
    c.cause = a.cause;
    c.share_time = std::round(share * 1000) / 1000;
    c.lost_ns = a.lost;
    c.requests = a.requests.size();
    if (const auto* top = argmax_by(a.by_culprit, [](const auto& x) { return x.second.first; }))
      c.culprit = a.culprit_of.at(top->first);
    c.server_pid = key_of_largest(a.lost_by_server);
    c.from_ns = a.from_ns;
    c.to_ns = a.to_ns;
    std::vector<std::pair<double, std::string>> by_lost;
    for (const auto& [id, ns] : a.lost_by_request) by_lost.emplace_back(-ns, id);
    std::sort(by_lost.begin(), by_lost.end());
    for (size_t i = 0; i < by_lost.size() && i < 20; ++i) c.request_ids.push_back(by_lost[i].second);
    t.causes.push_back(std::move(c));
  }
  std::sort(t.causes.begin(), t.causes.end(), [](const TailCause& a, const TailCause& b) { return a.share_time > b.share_time; });
  t.unexplained_share = tail_units ? std::round(std::max(0.0, 1.0 - explained) * 1000) / 1000 : 0.0;
  t.excess_ms = ms(excess_total);
  t.median_ms = ms(median);
  out.excess_ns = excess_total;
  out.median_ns = median;
  return out;
}

json request_tail_json(const RequestTail& t, const ChainIds& chain_ids, bool chain_detail) {
  json causes = json::array();
  for (const TailCause& c : t.causes) {
    const std::string name(RequestCauses::name(c.cause));
    causes.push_back({{"cause", name}, {"share_time", c.share_time}, {"requests", c.requests},
                      {"culprit", culprit_json(c.culprit)}, {"chain_id", chain_ids(c.server_pid, name)}});
    if (chain_detail) {
      causes.back()["server_pid"] = c.server_pid;
      causes.back()["from_ns"] = c.from_ns;
      causes.back()["to_ns"] = c.to_ns;
      causes.back()["request_ids"] = c.request_ids;
    }
  }
  json tail = {{"metric", metric_name(t.metric)}, {"quantile", t.quantile},
               {"threshold_ms", t.threshold_ms ? json(*t.threshold_ms) : json(nullptr)}, {"units", t.units},
               {"unexplained_share", t.unexplained_share}, {"causes", std::move(causes)}};
  if (chain_detail) tail["excess_ms"] = t.excess_ms, tail["median_ms"] = t.median_ms;
  return tail;
}

}  // namespace

Result<RequestTail> request_tail(sqlite3* db, const RequestQuery& q) {
  auto j = judge_request_rows(db, q);
  if (!j) return j.error();
  CauseFinder finder = request_finder_over(db, *j);
  return request_tail_work(j->rows, q, finder, j->scope.session_id).tail;
}

Result<std::vector<RequestTail>> request_tails_by_server(sqlite3* db, int64_t session_id, Metric metric) {
  RequestQuery q;
  q.session_id = session_id;
  q.metric = metric;
  auto j = judge_request_rows(db, q);
  if (!j) return j.error();
  std::map<uint32_t, std::vector<Row>> by_server;  // each server's judged rows, in the session's order
  for (const Row& r : j->rows) by_server[r.pid].push_back(r);
  CauseFinder finder = request_finder_over(db, *j);
  std::vector<RequestTail> out;
  for (const auto& [pid, rows] : by_server) {
    out.push_back(request_tail_work(rows, q, finder, j->scope.session_id).tail);
    out.back().server_pid = pid;
  }
  return out;
}

Result<json> request_latency_json(sqlite3* db, const RequestQuery& q) {
  auto judged_rows = judge_request_rows(db, q);
  if (!judged_rows) return judged_rows.error();
  const SessionScope* scope = &judged_rows->scope;
  const std::vector<Row>& rows = judged_rows->rows;
  const auto names = comms(db, scope->session_id);
  Values all;
  uint64_t streamed = 0;
  std::map<std::tuple<uint32_t, std::string, std::string>, std::pair<uint64_t, Values>> groups;
  for (const Row& r : rows) {
    all.add(r);
    streamed += r.streamed;
    auto& g = groups[{r.pid, r.path, r.tenant}];
    ++g.first;
    g.second.add(r);
  }
  json by = json::array();
  for (const auto& [key, g] : groups) {
    const auto& [pid, path, tenant] = key;
    auto it = names.find(pid);
    by.push_back({{"server_pid", pid}, {"comm", it == names.end() ? "" : it->second}, {"path", path}, {"tenant", tenant},
                  {"count", g.first}, {"errors", g.second.errors}, {"aborted", g.second.aborted},
                  {"disconnected", g.second.disconnected}, {"ttft_ms", summary(g.second.ttft)},
                  {"itl_ms", summary(g.second.itl)}, {"tpot_ms", summary(g.second.tpot)}, {"e2e_ms", summary(g.second.e2e)}});
  }

  CauseFinder finder = request_finder_over(db, *judged_rows);
  const ChainIds chain_ids(db, scope->session_id, q.metric);
  const RequestTailWork tr = request_tail_work(rows, q, finder, scope->session_id);
  json tail = request_tail_json(tr.tail, chain_ids, q.chain_detail);
  const double median = tr.median_ns;
  std::map<std::string, double> lost_by_cause;
  for (const TailCause& c : tr.tail.causes) lost_by_cause[std::string(RequestCauses::name(c.cause))] = c.lost_ns;

  std::vector<const Row*> order;
  for (const Row& r : rows)
    if (metric_of(r, q.metric)) order.push_back(&r);
  std::sort(order.begin(), order.end(), [&](const Row* a, const Row* b) {
    return *metric_of(*a, q.metric) > *metric_of(*b, q.metric);
  });
  if (order.size() > q.slowest) order.resize(q.slowest);
  json slowest = json::array();
  for (const Row* r : order) {
    auto opt_ms = [](const std::optional<int64_t>& v) { return v ? json(ms(static_cast<double>(*v))) : json(nullptr); };
    slowest.push_back({{"request_id", r->id}, {"method", r->method}, {"path", r->path}, {"tenant", r->tenant},
                       {"start_ns", r->start_ns}, {"ttft_ms", opt_ms(r->ttft)}, {"itl_max_ms", opt_ms(r->itl_max)},
                       {"e2e_ms", opt_ms(r->e2e)}, {"events", r->events}, {"prompt_bytes", r->prompt_bytes},
                       {"status", r->status}, {"server_pid", r->pid}, {"causes", request_causes(finder, chain_ids, *r, q.metric, median)}});
    add_request_fields(slowest.back(), *r);
  }
  json reqs = {{"count", rows.size()},
               {"session_requests", judged_rows->evidence.size()},
               {"streamed", streamed},
               {"errors", all.errors},
               {"aborted", all.aborted},
               {"disconnected", all.disconnected},
               {"window", {{"from_ns", scope->from_ns}, {"to_ns", scope->to_ns}}},
               {"ttft_ms", summary(all.ttft)},
               {"itl_ms", summary(all.itl)},
               {"e2e_ms", summary(all.e2e)},
               {"tpot_ms", summary(all.tpot)},
               {"api_wait_ms", summary(all.api_wait)},
               {"by", std::move(by)},
               {"tail", std::move(tail)},
               {"slowest", std::move(slowest)},
               {"semconv", semconv_json(rows, q.metric, lost_by_cause, tr.excess_ns)},
               {"failed", failed_requests(rows, q.slowest)}};
  return json{{"session_id", scope->session_id}, {"requests", std::move(reqs)}, {"engines", engines(db, scope->session_id)}};
}

namespace {

// ", 2 errors, 1 aborted" for a by[] row; "" when none failed.
std::string failures_text(const json& b) {
  std::string out;
  for (const char* k : {"errors", "aborted", "disconnected"})
    if (b.value(k, uint64_t{0})) out += ", " + std::to_string(b[k].get<uint64_t>()) + " " + k;
  return out;
}

// ", model llama-3-8b, 512 in / 128 out tokens, TPOT 21.5 ms" for a slowest[] row, with
// what is known.
std::string tokens_text(const json& s) {
  std::ostringstream t;
  if (s.contains("model") && s["model"].is_string()) t << ", model " << sanitize_untrusted(s["model"].get<std::string>(), 64);
  if (s.contains("input_tokens") && !s["input_tokens"].is_null()) t << ", " << s["input_tokens"].get<int64_t>() << " in";
  if (s.contains("output_tokens") && !s["output_tokens"].is_null()) t << ", " << s["output_tokens"].get<int64_t>() << " out tokens";
  if (s.contains("tpot_ms") && !s["tpot_ms"].is_null()) t << ", TPOT " << s["tpot_ms"].get<double>() << " ms";
  if (s.contains("end") && s["end"] != "complete") t << ", " << s["end"].get<std::string>();
  if (s.contains("api_wait_ms") && !s["api_wait_ms"].is_null() && s["api_wait_ms"].get<double>() > 0)
    t << ", API wait " << s["api_wait_ms"].get<double>() << " ms";
  return t.str();
}

}  // namespace

std::string request_latency_text(const json& doc) {
  std::ostringstream o;
  const json& r = doc.at("requests");
  auto pct = [](const json& s) {
    if (s.at("p50").is_null()) return std::string("-");
    std::ostringstream t;
    t << "p50 " << s["p50"].get<double>() << " / p90 " << s["p90"].get<double>() << " / p99 " << s["p99"].get<double>()
      << " / max " << s["max"].get<double>() << " ms";
    return t.str();
  };
  o << r["count"].get<uint64_t>() << " requests (" << r["streamed"].get<uint64_t>() << " streamed, "
    << r["errors"].get<uint64_t>() << " errors, " << r.value("aborted", uint64_t{0}) << " aborted, "
    << r.value("disconnected", uint64_t{0}) << " disconnected)\n";
  if (r["count"].get<uint64_t>() == 0) {
    // A session that served requests, none of them chosen: the filters are what to change,
    // not the trace.
    if (const uint64_t recorded = r.value("session_requests", uint64_t{0}); recorded > 0)
      o << "none of the session's " << recorded
        << " requests matches the filters (--since, --pid, --path, --tenant): widen or drop them\n";
    else
      o << "no HTTP requests were seen: trace a serving process (a TCP listener in the traced process tree, or "
           "--http-port PORT)\n";
    return o.str();
  }
  o << "  TTFT " << pct(r["ttft_ms"]) << "\n  ITL  " << pct(r["itl_ms"]) << "\n";
  if (r.contains("tpot_ms")) o << "  TPOT " << pct(r["tpot_ms"]) << " (from the server's token counts)\n";
  o << "  E2E  " << pct(r["e2e_ms"]) << "\n";
  if (r.contains("api_wait_ms"))
    o << "  API wait " << pct(r["api_wait_ms"]) << " (request received → the server's read)\n";
  o << "by server, path, tenant:\n";
  for (const auto& b : r["by"])
    o << "  pid " << b["server_pid"].get<int64_t>() << " (" << sanitize_untrusted(b["comm"].get<std::string>(), 32) << ") "
      << sanitize_untrusted(b["path"].get<std::string>(), 80) << " tenant "
      << sanitize_untrusted(b["tenant"].get<std::string>(), 48) << ": " << b["count"].get<uint64_t>() << " requests"
      << failures_text(b) << ", TTFT " << pct(b["ttft_ms"]) << "\n";
  const json& t = r["tail"];
  o << "tail (" << t["metric"].get<std::string>() << " >= p" << t["quantile"].get<double>() * 100 << "): "
    << t["units"].get<uint64_t>() << (t["metric"] == "itl" ? " gaps" : " requests") << ", unexplained share "
    << t["unexplained_share"].get<double>() << "\n";
  for (const auto& c : t["causes"]) {
    o << "  " << c["cause"].get<std::string>() << ": " << c["share_time"].get<double>() * 100 << "% of the tail's time above the median, "
      << c["requests"].get<uint64_t>() << " requests";
    const json& k = c["culprit"];
    if (k.contains("comm")) o << ", culprit pid " << k["pid"].get<int64_t>() << " (" << sanitize_untrusted(k["comm"].get<std::string>(), 32) << ")";
    const std::string rank = nccl_rank_phrase(k.contains("rank_source"),
                                              k.contains("rank") ? std::optional<int64_t>(k["rank"].get<int64_t>()) : std::nullopt,
                                              k.value("nranks", int64_t{0}));
    if (!rank.empty()) o << ", " << rank;
    if (k.contains("long_requests")) {
      o << ", long requests";
      for (const auto& l : k["long_requests"]) o << " " << long_request_text(l);
      if (k.contains("pass_ms"))
        o << " (a " << k["pass_ms"].get<double>() << " ms forward pass, median " << k["median_pass_ms"].get<double>() << " ms)";
    }
    if (k.contains("waiting_max"))
      o << ", up to " << k["waiting_max"].get<double>() << " requests waiting in engine pid " << k["pid"].get<int64_t>();
    if (k.contains("peer"))
      o << ", client " << sanitize_untrusted(k["peer"].get<std::string>(), 64) << " (" << k["eagain"].get<int64_t>() << " EAGAIN, "
        << k["short_writes"].get<int64_t>() << " short writes, " << k["blocked_writes"].get<int64_t>() << " blocking writes, "
        << k["retransmits"].get<int64_t>() << " retransmits)";
    if (k.contains("kv_cache_usage"))
      o << ", KV cache " << k["kv_cache_usage"].get<double>() * 100 << "% full, " << k["preemptions"].get<double>()
        << " preemptions in engine pid " << k["pid"].get<int64_t>();
    o << "\n";
  }
  o << "slowest:\n";
  for (const auto& s : r["slowest"]) {
    // "-" alone when not measured (a response that was not streamed has no token gap).
    auto v = [](const json& x) {
      if (x.is_null()) return std::string("-");
      std::ostringstream t;
      t << x.get<double>() << " ms";
      return t.str();
    };
    o << "  " << sanitize_untrusted(s["request_id"].get<std::string>(), 64) << " " << sanitize_untrusted(s["method"].get<std::string>(), 16) << " "
      << sanitize_untrusted(s["path"].get<std::string>(), 80) << " status " << s["status"].get<int>() << ": TTFT "
      << v(s["ttft_ms"]) << ", ITL max " << v(s["itl_max_ms"]) << ", E2E " << v(s["e2e_ms"]) << ", "
      << s["events"].get<uint64_t>() << " events" << tokens_text(s);
    for (const auto& c : s["causes"]) o << "; " << c["cause"].get<std::string>() << " " << c["lost_ms"].get<double>() << " ms";
    o << "\n";
  }
  if (r.contains("failed") && !r["failed"].empty()) {
    o << "failed (status >= 400, aborted by the server, client disconnected):\n";
    for (const auto& s : r["failed"])
      o << "  " << sanitize_untrusted(s["request_id"].get<std::string>(), 64) << " " << sanitize_untrusted(s["method"].get<std::string>(), 16) << " "
        << sanitize_untrusted(s["path"].get<std::string>(), 80) << " tenant " << sanitize_untrusted(s["tenant"].get<std::string>(), 48)
        << ": status " << s["status"].get<int>() << ", " << s["end"].get<std::string>() << "\n";
  }
  return o.str();
}

}  // namespace causeway::requests
