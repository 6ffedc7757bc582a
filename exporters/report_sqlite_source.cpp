#include "exporters/report_sqlite_source.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "diagnosis/chains.h"
#include "diagnosis/session_scope.h"
#include "diagnosis/system_info.h"
#include "diagnosis/tail_breakdown.h"
#include "diagnosis/event_window.h"
#include "common/untrusted_json.h"
#include "tracedb/event_row.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

using json = nlohmann::json;

SchedRow sched_row(const Statement& st) {
  return {st.col_int(0), static_cast<int32_t>(st.col_int(1)), static_cast<uint32_t>(st.col_int(2)),
          static_cast<uint32_t>(st.col_int(3)), st.col_int(4), static_cast<uint32_t>(st.col_int(5)),
          static_cast<uint32_t>(st.col_int(6))};
}

constexpr const char* kSchedCols = "SELECT ts_ns, cpu, prev_tid, prev_pid, prev_state, next_tid, next_pid FROM sched ";

class SqliteLanes final : public LaneSource {
 public:
  SqliteLanes(sqlite3* db, int64_t sid) : db_(db), sid_(sid) {}

  Result<std::optional<ClaimedCall>> worst_claim(const std::string& chain_id) override {
    return one_call("SELECT c.pid, c.tid, c.ts_ns, c.dur_ns, c.lost_ns, c.gap, coalesce(o.name, '') "
                    "FROM call_causes c LEFT JOIN ops o ON o.id = c.op_id "
                    "WHERE c.session_id = ?1 AND c.chain_id = ?2 ORDER BY c.lost_ns DESC, c.dur_ns DESC LIMIT 1",
                    [&](Statement& st) { st.bind(2, chain_id); });
  }

  Result<std::optional<ClaimedCall>> longest_call(uint32_t pid, const std::string& op, int64_t from, int64_t to) override {
    // ClaimedCall's first four, from the one column list (ops has none of these names).
    static constexpr EventColumns<4> kCallColumns{{EventCol::pid, EventCol::tid, EventCol::ts_ns, EventCol::dur_ns}};
    return one_call("SELECT " + kCallColumns.sql() + ", 0, 0, o.name FROM events e JOIN ops o ON o.id = e.op_id "
                    "WHERE e.session_id = ?1 AND e.pid = ?2 AND o.name = ?3 AND e.ts_ns BETWEEN ?4 AND ?5 "
                    "ORDER BY e.dur_ns DESC LIMIT 1",
                    [&](Statement& st) {
                      st.bind(2, int64_t{pid});
                      st.bind(3, op);
                      st.bind(4, from);
                      st.bind(5, to);
                    });
  }

  Result<std::vector<SchedRow>> sched(int64_t from, int64_t to, size_t limit) override {
    auto st = Statement::prepare(db_, std::string(kSchedCols) + "WHERE session_id = ?1 AND ts_ns >= ?2 AND ts_ns <= ?3 ORDER BY ts_ns LIMIT ?4");
    if (!st) return st.error();
    st->bind(1, sid_);
    st->bind(2, from);
    st->bind(3, to);
    st->bind(4, static_cast<int64_t>(limit));
    std::vector<SchedRow> rows;
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) rows.push_back(sched_row(*st));
    if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db_));
    return rows;
  }

  Result<std::optional<SchedRow>> prior_switch(uint32_t tid, int64_t before, int64_t since) override {
    auto st = Statement::prepare(db_, std::string(kSchedCols) +
                                          "WHERE session_id = ?1 AND ts_ns < ?2 AND ts_ns >= ?3 AND (prev_tid = ?4 OR next_tid = ?4) "
                                          "ORDER BY ts_ns DESC LIMIT 1");
    if (!st) return st.error();
    st->bind(1, sid_);
    st->bind(2, before);
    st->bind(3, since);
    st->bind(4, int64_t{tid});
    int rc = st->step();
    if (rc == SQLITE_DONE) return std::optional<SchedRow>{};
    if (rc != SQLITE_ROW) return make_error("sql", sqlite_error_text(db_));
    return std::optional<SchedRow>{sched_row(*st)};
  }

  Result<std::vector<int64_t>> wakeups(uint32_t tid, int64_t from, int64_t to, size_t limit) override {
    auto st = Statement::prepare(db_,
                                 "SELECT ts_ns FROM wakeups WHERE session_id = ?1 AND tid = ?2 AND ts_ns >= ?3 AND ts_ns <= ?4 "
                                 "ORDER BY ts_ns LIMIT ?5");
    if (!st) return st.error();
    st->bind(1, sid_);
    st->bind(2, int64_t{tid});
    st->bind(3, from);
    st->bind(4, to);
    st->bind(5, static_cast<int64_t>(limit));
    std::vector<int64_t> out;
    while (st->step() == SQLITE_ROW) out.push_back(st->col_int(0));
    return out;
  }

  Result<std::vector<CallRow>> calls(int64_t from, int64_t to, uint32_t pid_a, uint32_t pid_b, size_t limit) override {
    if (ops_.empty()) {
      auto st = Statement::prepare(db_, "SELECT id, name, source FROM ops");
      if (!st) return st.error();
      while (st->step() == SQLITE_ROW) ops_[st->col_int(0)] = {st->col_text(1), st->col_text(2)};
    }
    auto ids = event_ids_for_window(db_, sid_, from, to);
    if (!ids) return ids.error();
    std::vector<CallRow> out;
    if (ids->empty()) return out;
    constexpr EventColumns<5> kCols{{EventCol::ts_ns, EventCol::dur_ns, EventCol::pid, EventCol::tid, EventCol::op_id}};
    auto st = Statement::prepare(db_, "SELECT " + kCols.sql() + " FROM events WHERE id >= ?1 AND id <= ?2 "
                                      "AND session_id = ?3 AND ts_ns >= ?4 AND ts_ns <= ?5 AND (pid = ?6 OR pid = ?7) "
                                      "ORDER BY ts_ns LIMIT ?8");
    if (!st) return st.error();
    st->bind(1, ids->lo);
    st->bind(2, ids->hi);
    st->bind(3, sid_);
    st->bind(4, from);
    st->bind(5, to);
    st->bind(6, int64_t{pid_a});
    st->bind(7, int64_t{pid_b});
    st->bind(8, static_cast<int64_t>(limit));
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) {
      const CallRecord e = decode_event(st->get(), kCols).call;
      auto it = ops_.find(e.op);
      if (it == ops_.end()) continue;
      out.push_back({e.ts_ns, e.dur_ns, e.pid, e.tid, it->second.first, it->second.second});
    }
    if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db_));
    return out;
  }

  Result<std::vector<RequestSpan>> requests(const std::vector<std::string>& ids) override {
    std::vector<RequestSpan> out;
    if (ids.empty() || !has_requests_table()) return out;
    std::string in;
    for (size_t i = 0; i < ids.size(); ++i) in += (i ? ", ?" : "?") + std::to_string(i + 2);
    auto st = Statement::prepare(db_, "SELECT request_id, server_pid, start_ns, " + std::string(kRequestSpanColumns) + " FROM requests "
                                      "WHERE session_id = ?1 AND request_id IN (" + in + ") ORDER BY start_ns LIMIT " +
                                      std::to_string(ids.size()));
    if (!st) return st.error();
    st->bind(1, sid_);
    for (size_t i = 0; i < ids.size(); ++i) st->bind(static_cast<int>(i + 2), ids[i]);
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) {
      RequestSpan r{st->col_text(0), static_cast<uint32_t>(st->col_int(1)), st->col_int(2), st->col_int(3), std::nullopt};
      if (!st->col_null(4)) r.first_token = st->col_int(4);
      out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db_));
    return out;
  }

  std::string comm(uint32_t pid, uint32_t tid) override {
    // A thread other than the main one goes by its own name (a lock holder "pt_checkpoint").
    std::string c;
    if (tid && tid != pid) c = text("SELECT comm FROM threads WHERE session_id = ?1 AND tid = ?2", tid);
    if (c.empty()) c = text("SELECT comm FROM processes WHERE session_id = ?1 AND pid = ?2", pid);
    if (c.empty()) c = text("SELECT comm FROM threads WHERE session_id = ?1 AND tid = ?2", tid ? tid : pid);
    return c;
  }

 private:
  sqlite3* db_;
  int64_t sid_;
  std::unordered_map<int64_t, std::pair<std::string, std::string>> ops_;  // id → (name, source)

  template <class Bind>
  Result<std::optional<ClaimedCall>> one_call(const std::string& sql, Bind bind) {
    auto st = Statement::prepare(db_, sql);
    if (!st) return st.error();
    st->bind(1, sid_);
    bind(*st);
    int rc = st->step();
    if (rc == SQLITE_DONE) return std::optional<ClaimedCall>{};
    if (rc != SQLITE_ROW) return make_error("sql", sqlite_error_text(db_));
    return std::optional<ClaimedCall>{ClaimedCall{static_cast<uint32_t>(st->col_int(0)), static_cast<uint32_t>(st->col_int(1)),
                                                  st->col_int(2), st->col_int(3), st->col_int(4), st->col_int(5) != 0,
                                                  st->col_text(6)}};
  }

  std::string text(const char* sql, uint32_t id) {
    auto st = Statement::prepare(db_, sql);
    if (!st) return "";
    st->bind(1, sid_);
    st->bind(2, int64_t{id});
    return st->step() == SQLITE_ROW ? st->col_text(0) : "";
  }

  bool has_requests_table() {
    auto st = Statement::prepare(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'requests'");
    return st && st->step() == SQLITE_ROW;
  }
};

Result<std::vector<TailClaim>> load_claims(sqlite3* db, int64_t sid, int64_t from, int64_t to, const OpStats& op, uint64_t threshold) {
  auto st = Statement::prepare(db,
                               "SELECT c.cause, c.dur_ns FROM call_causes c JOIN ops o ON o.id = c.op_id "
                               "WHERE c.session_id = ?1 AND o.name = ?2 AND o.source = ?3 AND c.pid = ?4 AND c.gap = 0 "
                               "AND c.dur_ns >= ?5 AND c.ts_ns >= ?6 AND c.ts_ns <= ?7 LIMIT ?8");
  if (!st) return st.error();
  st->bind(1, sid);
  st->bind(2, op.op);
  st->bind(3, op.source);
  st->bind(4, int64_t{op.pid});
  st->bind(5, static_cast<int64_t>(threshold));
  st->bind(6, from);
  st->bind(7, to);
  st->bind(8, kMaxClaims);
  std::vector<TailClaim> out;
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) out.push_back({st->col_text(0), static_cast<uint64_t>(st->col_int(1))});
  if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db));
  return out;
}

class SqliteSource final : public ReportSource {
 public:
  SqliteSource(DbHandle db, SessionScope sc, SqliteReportOptions o)
      : db_(std::move(db)), sc_(sc), o_(std::move(o)), lanes_(db_.get(), sc.session_id) {}

  Result<StatsResult> stats() override {
    StatsQuery q;
    q.since_ns = o_.scope.since_ns;
    q.pid = o_.scope.pid;
    q.session_id = sc_.session_id;
    return compute_stats(db_.get(), q);
  }

  Result<SessionHeader> header(const StatsResult&) override {
    sqlite3* db = db_.get();
    SessionHeader h;
    h.session_id = sc_.session_id;
    h.from_ns = sc_.from_ns;
    h.to_ns = sc_.to_ns;
    h.pid = o_.scope.pid;
    h.system_line = system_line(db, sc_.session_id);
    // The header's row already says what the line is.
    if (h.system_line.rfind("System: ", 0) == 0) h.system_line.erase(0, 8);
    if (auto st = Statement::prepare(db, "SELECT source_kind, coalesce(label, '') FROM sessions WHERE id = ?1")) {
      st->bind(1, sc_.session_id);
      if (st->step() == SQLITE_ROW) {
        h.source_kind = st->col_text(0);
        h.label = st->col_text(1);
      }
    }
    auto hosts = load_merged_hosts(db, sc_.session_id);
    if (hosts && !hosts->empty()) {
      h.systems = json::array();
      for (const auto& s : *hosts) h.systems.push_back(s.system);
    } else if (auto sys = load_session_system(db, sc_.session_id)) {
      h.systems = json::array({*sys});
    }
    return h;
  }

  Result<json> chains() override {
    ChainQuery q;
    q.since_ns = o_.scope.since_ns;
    q.pid = o_.scope.pid;
    q.session_id = sc_.session_id;
    q.limit = 500;
    auto r = load_chains(db_.get(), q);
    if (!r) return r.error();
    json chains = std::move((*r)["chains"]);
    rank_chains(chains);
    return chains;
  }

  Result<std::vector<HostRow>> hosts(const StatsResult& stats, const json& chains) override {
    auto hosts = load_merged_hosts(db_.get(), sc_.session_id);
    if (!hosts) return hosts.error();
    if (hosts->empty()) return std::vector<HostRow>{};
    return merged_host_rows(*hosts, stats, chains);
  }

  Result<std::optional<json>> requests() override {
    if (!o_.requests) return std::optional<json>{};
    return o_.requests(db_.get(), RequestsScope{sc_.session_id, o_.scope.since_ns, o_.scope.pid});
  }

  // The requests of the window `requests --json` reads (start in the session's window, the
  // --pid server), as millisecond values.
  Result<RequestSamples> request_samples() override {
    RequestSamples out;
    auto has = query_int(db_.get(), "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'requests'");
    if (!has || !*has || **has == 0) return out;
    auto st = Statement::prepare(db_.get(), "SELECT ttft_ns, e2e_ns, itl_us FROM requests WHERE session_id = ?1 AND start_ns >= ?2 "
                                            "AND start_ns <= ?3 AND (?4 IS NULL OR server_pid = ?4)");
    if (!st) return st.error();
    st->bind(1, sc_.session_id);
    st->bind(2, sc_.from_ns);
    st->bind(3, sc_.live ? INT64_MAX : std::max(sc_.to_ns, sc_.from_ns));
    if (o_.scope.pid) st->bind(4, int64_t{*o_.scope.pid});
    else st->bind_null(4);
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) {
      if (!st->col_null(0)) out.ttft_ms.push_back(static_cast<double>(st->col_int(0)) / 1e6);
      if (!st->col_null(1)) out.e2e_ms.push_back(static_cast<double>(st->col_int(1)) / 1e6);
      if (st->col_null(2)) continue;
      const json gaps = parse_untrusted_json_or_null(st->col_text(2));
      if (gaps.is_array())
        for (const auto& g : gaps)
          if (g.is_number()) out.itl_ms.push_back(g.get<double>() / 1e3);
    }
    if (rc != SQLITE_DONE) return make_error("db_read", "reading requests failed: " + sqlite_error_text(db_.get()));
    return out;
  }

  Result<LaneSource*> lanes_for(const json&) override { return static_cast<LaneSource*>(&lanes_); }

  Result<std::vector<OpHistogram>> histograms(const StatsResult& stats) override {
    TailQuery tq;
    tq.since_ns = o_.scope.since_ns;
    tq.pid = o_.scope.pid;
    tq.session_id = sc_.session_id;
    tq.limit = 10'000;  // every (op, process) pair: the ones drawn are looked up below
    quantile_ = tq.quantile;
    auto tail = tail_breakdown(db_.get(), tq);
    if (!tail) return tail.error();
    std::map<std::pair<std::string, uint32_t>, const TailOp*> tail_of;
    for (const TailOp& t : tail->ops) tail_of[{t.op, t.pid}] = &t;
    std::vector<OpHistogram> out;
    for (const OpStats& op : stats.ops) {
      if (out.size() >= o_.scope.max_ops) break;
      if (op.count == 0) continue;
      auto it = tail_of.find({op.op, op.pid});
      const TailOp* t = it == tail_of.end() ? nullptr : it->second;
      std::vector<TailClaim> claims;
      if (t && t->tail_calls > 0) {
        auto c = load_claims(db_.get(), sc_.session_id, tail->from_ns, tail->to_ns, op, t->threshold_ns);
        if (!c) return c.error();
        claims = std::move(*c);
      }
      out.push_back(build_op_histogram(op, t, claims));
    }
    return out;
  }

  double tail_quantile() const override { return quantile_; }
  std::string origin() const override { return "session " + std::to_string(sc_.session_id); }

 private:
  DbHandle db_;
  SessionScope sc_;
  SqliteReportOptions o_;
  SqliteLanes lanes_;
  double quantile_ = 0.99;
};

}  // namespace

Result<std::unique_ptr<ReportSource>> open_sqlite_report_source(const SqliteReportOptions& o) {
  auto db = open_read_only(o.db_path);
  if (!db) return db.error();
  auto sc = resolve_scope(db->get(), o.session_id, o.scope.since_ns);
  if (!sc) return sc.error();
  return std::unique_ptr<ReportSource>(std::make_unique<SqliteSource>(std::move(*db), *sc, o));
}

}  // namespace causeway
