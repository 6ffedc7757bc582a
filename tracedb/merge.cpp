#include "tracedb/merge.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>

#include "common/fs_user.h"
#include "tracedb/event_blocks.h"
#include "tracedb/schema.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

namespace fs = std::filesystem;

Result<std::string> sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("db_missing", "cannot read " + path);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  std::string hex;
  char b[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(b, sizeof b, "%02x", md[i]);
    hex += b;
  }
  return hex;
}

std::string uri_of(const std::string& path) {
  std::string out = "file:";
  for (char c : fs::absolute(path).string()) {
    if (c == '%' || c == '?' || c == '#') {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", static_cast<unsigned char>(c));
      out += b;
    } else {
      out += c;
    }
  }
  return out + "?mode=ro";
}

// The input is attached read-only (mode=ro): SQLite never writes a read-only attachment.
Result<void> attach_source(sqlite3* db, const std::string& path) {
  std::string quoted;
  for (char c : uri_of(path)) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  if (auto r = exec_sql(db, "ATTACH DATABASE '" + quoted + "' AS src"); !r)
    return make_error("db_open", path + ": " + r.error().message);
  return {};
}

// Readers refuse an older schema (open_read_only); merge reads it as it is instead.
Result<int> input_version(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(uri_of(path).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  DbHandle db(raw);
  if (rc != SQLITE_OK) return make_error("db_open", path + ": " + (raw ? sqlite3_errmsg(raw) : "cannot open"));
  auto app = query_int(db.get(), "PRAGMA application_id");
  if (!app) return make_error("db_corrupt", path + ": " + app.error().message);
  if (app->value_or(0) != kApplicationId)
    return make_error("db_foreign", path + " is not a causeway trace DB (application_id " + std::to_string(app->value_or(0)) + ")");
  auto v = query_int(db.get(), "PRAGMA user_version");
  if (!v) return v.error();
  const int version = static_cast<int>(v->value_or(0));
  if (version > latest_schema_version())
    return make_error("db_too_new", path + " has trace DB schema version " + std::to_string(version) +
                                        ", newer than this causeway supports (" + std::to_string(latest_schema_version()) +
                                        "): upgrade causeway");
  return version;
}

std::set<std::string> columns(sqlite3* db, const std::string& schema, const std::string& table) {
  std::set<std::string> out;
  auto st = Statement::prepare(db, "SELECT name FROM pragma_table_info(?1, ?2)");
  if (!st) return out;
  st->bind(1, std::string_view(table));
  st->bind(2, std::string_view(schema));
  while (st->step() == SQLITE_ROW) out.insert(st->col_text(0));
  return out;
}

// INSERT INTO main.T (every column main has) SELECT (override, else the source column, else
// NULL: a source of an older schema is migrated in the copy) FROM src.T AS s [tail].
Result<void> copy_table(sqlite3* db, const std::string& table, const std::map<std::string, std::string>& overrides,
                        const std::string& tail, const std::string& conflict = "", const std::string& dest = "") {
  const std::string into = dest.empty() ? "main." + table : dest;
  auto dst = columns(db, dest.empty() ? "main" : "temp", dest.empty() ? table : dest.substr(dest.find('.') + 1));
  auto src = columns(db, "src", table);
  if (src.empty()) return {};  // the source has no such table (an older schema)
  std::string cols, exprs;
  for (const std::string& c : dst) {
    cols += (cols.empty() ? "" : ", ") + c;
    auto o = overrides.find(c);
    // An override that rewrites the source's own column (a shift) has nothing to read in a
    // source of an older schema without it.
    const bool rewrites_missing = o != overrides.end() && !src.count(c) && o->second.find("s." + c) != std::string::npos;
    std::string e = o != overrides.end() && !rewrites_missing ? o->second : src.count(c) ? "s." + c : "NULL";
    exprs += (exprs.empty() ? "" : ", ") + e;
  }
  return exec_sql(db, "INSERT INTO " + into + " (" + cols + ") SELECT " + exprs + " FROM src." + table + " AS s " +
                          tail + " " + conflict);
}

std::string shift(const std::string& col, int64_t base) {
  // 0 stays 0: the idle task (swapper) and "no pid".
  return "CASE WHEN s." + col + " IS NULL OR s." + col + " = 0 THEN s." + col + " ELSE s." + col + " + " +
         std::to_string(base) + " END";
}

struct SourceSession {
  int64_t id = 0, started_ns = 0, stopped_ns = 0, rolled_up_to_ns = 0;
  std::string host, boot_id, system, kind;
  int64_t clock_offset_ns = 0;
};

Result<SourceSession> latest_session(sqlite3* db, const std::string& path) {
  const bool v3 = columns(db, "src", "sessions").count("system") > 0;
  auto st = Statement::prepare(db, std::string("SELECT id, started_ns, coalesce(stopped_ns, 0), rolled_up_to_ns, coalesce(host, ''), ") +
                                       (v3 ? "coalesce(boot_id, ''), coalesce(system, ''), coalesce(clock_offset_ns, 0)"
                                           : "'', '', 0") +
                                       ", source_kind FROM src.sessions ORDER BY id DESC LIMIT 1");
  if (!st) return st.error();
  if (st->step() != SQLITE_ROW) return make_error("no_data", path + " holds no session");
  SourceSession s;
  s.id = st->col_int(0);
  s.started_ns = st->col_int(1);
  s.stopped_ns = st->col_int(2);
  s.rolled_up_to_ns = st->col_int(3);
  s.host = st->col_text(4);
  s.boot_id = st->col_text(5);
  s.system = st->col_text(6);
  s.clock_offset_ns = st->col_int(7);
  s.kind = st->col_text(8);
  if (s.host.empty()) s.host = fs::path(path).stem().string();
  return s;
}

// One table of an input copied into the output: column overrides, the tail of the SELECT,
// an ON CONFLICT clause, and another destination ("": main.<table>).
struct MergeCopy {
  const char* table;
  std::map<std::string, std::string> over;
  std::string tail;
  std::string conflict;
  std::string dest;
};

// Maps the input's op and stack ids to the output's (temp.opmap, temp.stackmap).
Result<void> map_ops_and_stacks(sqlite3* db) {
  // Ops of imports may have other ids here: map by (source, name).
  const std::string sql =
      // Ids below 10000 are fixed by bpf/events.h and the correlator relies on them: keep ids.
      "INSERT OR IGNORE INTO main.ops (id, source, name, kind, arg_names) SELECT id, source, name, kind, arg_names FROM src.ops;"
      "INSERT INTO main.ops (source, name, kind, arg_names) SELECT s.source, s.name, s.kind, s.arg_names FROM src.ops s "
      "WHERE NOT EXISTS (SELECT 1 FROM main.ops m WHERE m.source = s.source AND m.name = s.name);"
      "DROP TABLE IF EXISTS temp.opmap; CREATE TEMP TABLE opmap (sid INTEGER PRIMARY KEY, mid INTEGER NOT NULL);"
      "INSERT INTO temp.opmap SELECT s.id, m.id FROM src.ops s JOIN main.ops m ON m.source = s.source AND m.name = s.name;"
      // Stacks: the same hash is the same stack (it may be on both hosts: same binaries).
      "INSERT OR IGNORE INTO main.stacks (hash, frames) SELECT hash, frames FROM src.stacks;"
      "DROP TABLE IF EXISTS temp.stackmap; CREATE TEMP TABLE stackmap (sid INTEGER PRIMARY KEY, mid INTEGER NOT NULL);"
      "INSERT INTO temp.stackmap SELECT s.id, m.id FROM src.stacks s JOIN main.stacks m ON m.hash = s.hash;";
  return exec_sql(db, sql);
}

// What each table of host k's session copies, and how: pids, tids, cpus and cgroup ids moved
// into host k's range, ops and stacks mapped, events staged (merge_trace_dbs orders them).
std::vector<MergeCopy> merge_copies(int64_t sid, int k, const SourceSession& ss, int64_t merged_rolled_sec) {
  const int64_t pbase = k * kMergedPidStride, cbase = k * kMergedCpuStride;
  const std::string SID = std::to_string(sid);
  const std::string where = "WHERE s.session_id = " + std::to_string(ss.id);
  // cgroup ids are inode numbers of each host's own cgroup tree: two hosts reuse them.
  const int64_t gbase = static_cast<int64_t>(k) * kMergedCgroupStride;
  return {
      {"processes",
       {{"session_id", SID}, {"pid", shift("pid", pbase)}, {"ppid", shift("ppid", pbase)}, {"cgroup_id", shift("cgroup_id", gbase)}},
       where, ""},
      {"threads",
       {{"session_id", SID}, {"tid", shift("tid", pbase)}, {"pid", shift("pid", pbase)}, {"cgroup_id", shift("cgroup_id", gbase)}},
       where, ""},
      {"cgroups", {{"session_id", SID}, {"cgroup_id", shift("cgroup_id", gbase)}}, where, ""},
      {"events",
       {{"id", "NULL"},
        {"session_id", SID},
        {"pid", shift("pid", pbase)},
        {"tid", shift("tid", pbase)},
        {"cpu", "s.cpu + " + std::to_string(cbase)},
        {"op_id", "(SELECT mid FROM temp.opmap WHERE sid = s.op_id)"},
        {"stack_id", "(SELECT mid FROM temp.stackmap WHERE sid = s.stack_id)"},
        {"cgroup_id", shift("cgroup_id", gbase)}},
       where, "", "temp.ev_stage"},
      {"sched",
       {{"id", "NULL"},
        {"session_id", SID},
        {"cpu", "s.cpu + " + std::to_string(cbase)},
        {"prev_tid", shift("prev_tid", pbase)},
        {"prev_pid", shift("prev_pid", pbase)},
        {"next_tid", shift("next_tid", pbase)},
        {"next_pid", shift("next_pid", pbase)}},
       where + " ORDER BY s.ts_ns", ""},
      {"wakeups",
       {{"id", "NULL"},
        {"session_id", SID},
        {"tid", shift("tid", pbase)},
        {"pid", shift("pid", pbase)},
        {"waker_tid", shift("waker_tid", pbase)},
        {"waker_pid", shift("waker_pid", pbase)},
        {"target_cpu", "s.target_cpu + " + std::to_string(cbase)}},
       where + " ORDER BY s.ts_ns", ""},
      // Whole seconds every host had rolled up; later seconds are read from events.
      {"rollups",
       {{"session_id", SID}, {"pid", shift("pid", pbase)}, {"op_id", "(SELECT mid FROM temp.opmap WHERE sid = s.op_id)"}},
       where + " AND s.sec < " + std::to_string(merged_rolled_sec), ""},
      // Served HTTP requests and the engines' scraped metrics (docs/INFERENCE.md): their
      // servers are this host's processes.
      {"requests", {{"session_id", SID}, {"server_pid", shift("server_pid", pbase)}}, where, ""},
      {"engines", {{"session_id", SID}, {"pid", shift("pid", pbase)}}, where, ""},
      {"engine_metrics", {{"session_id", SID}, {"pid", shift("pid", pbase)}}, where, ""},
      {"collector_stats",
       {{"session_id", SID}},
       where, "ON CONFLICT (session_id, name) DO UPDATE SET value = value + excluded.value"},
  };
}

// The merged_hosts row of host k: where its rows came from and where its ids moved.
Result<void> record_merged_host(sqlite3* db, int64_t sid, int k, const std::string& path, const SourceSession& ss,
                                const std::string& sha) {
  auto ins = Statement::prepare(db,
                                "INSERT INTO main.merged_hosts (session_id, host_index, host, boot_id, clock_offset_ns, system, "
                                "source_file, source_sha256, source_session_id, source_started_ns, pid_base, cpu_base) "
                                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!ins) return ins.error();
  ins->bind(1, sid);
  ins->bind(2, int64_t{k});
  ins->bind(3, ss.host);
  ins->bind(4, ss.boot_id);
  ins->bind(5, ss.clock_offset_ns);
  if (ss.system.empty()) ins->bind_null(6);
  else ins->bind(6, ss.system);
  ins->bind(7, fs::path(path).filename().string());
  ins->bind(8, sha);
  ins->bind(9, ss.id);
  ins->bind(10, ss.started_ns);
  const int64_t pbase = k * kMergedPidStride, cbase = k * kMergedCpuStride;
  ins->bind(11, pbase);
  ins->bind(12, cbase);
  if (ins->step() != SQLITE_DONE) return make_error("db_write", sqlite_error_text(db));
  return {};
}

Result<void> merge_one(sqlite3* db, int64_t sid, int k, const std::string& path, const SourceSession& ss,
                       const std::string& sha, int64_t merged_rolled_sec, MergeInputSummary& sum) {
  if (auto r = map_ops_and_stacks(db); !r) return r;
  for (const MergeCopy& c : merge_copies(sid, k, ss, merged_rolled_sec))
    if (auto r = copy_table(db, c.table, c.over, c.tail, c.conflict, c.dest); !r)
      return make_error("db_write", std::string("copying ") + c.table + " of " + path + ": " + r.error().message);
  const std::string S = std::to_string(ss.id);
  auto n = query_int(db, "SELECT count(*) FROM src.events WHERE session_id = " + S);
  if (!n) return n.error();
  sum.events = n->value_or(0);
  auto last = query_int(db, "SELECT coalesce(max(max_end_ns), 0) FROM src.event_blocks WHERE session_id = " + S);
  sum.last_ns = last ? last->value_or(0) : 0;
  return record_merged_host(db, sid, k, path, ss, sha);
}

// Each input exists, is a causeway DB this binary can read, and is given once (by content).
Result<std::vector<MergeInputSummary>> check_merge_inputs(const std::vector<std::string>& inputs) {
  std::vector<MergeInputSummary> out;
  std::error_code ec;
  std::map<std::string, std::string> seen_sha;
  for (const std::string& in : inputs) {
    if (!fs::is_regular_file(in, ec)) return make_error("db_missing", in + ": no such trace DB");
    // A causeway DB not newer than this binary; an older one is migrated in the copy.
    auto version = input_version(in);
    if (!version) return version.error();
    auto sha = sha256_file(in);
    if (!sha) return sha.error();
    if (auto it = seen_sha.find(*sha); it != seen_sha.end())
      return make_error("merge_usage", in + " is the same DB as " + it->second + " (sha256 " + sha->substr(0, 16) +
                                           "…): each host's DB may be given once");
    seen_sha[*sha] = in;
    MergeInputSummary s;
    s.path = in;
    s.sha256 = *sha;
    s.schema_version = *version;
    out.push_back(s);
  }
  return out;
}

// A new DB file at `tmp` with the current schema, written without a journal (a fresh file,
// renamed into place only when complete).
Result<DbHandle> create_merge_output(const std::string& tmp) {
  std::error_code ec;
  fs::remove(tmp, ec);
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(tmp.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nullptr) != SQLITE_OK) {
    std::string e = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close_v2(raw);
    return make_error("db_write", "cannot create " + tmp + ": " + e);
  }
  DbHandle db(raw);
  if (auto r = migrate(db.get()); !r) return r.error();
  if (auto r = exec_sql(db.get(), "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF"); !r)
    return r.error();
  return db;
}

// Pass 1: each input's latest session, refusing merged DBs and the same session twice; fills
// the inputs' host, session and clock fields and the notes on migrated inputs.
Result<std::vector<SourceSession>> read_merge_sessions(sqlite3* db, MergeSummary& out) {
  std::vector<SourceSession> sessions;
  std::map<std::string, std::string> seen_session;
  for (MergeInputSummary& s : out.inputs) {
    if (auto r = attach_source(db, s.path); !r) return r.error();
    auto ss = latest_session(db, s.path);
    Result<std::optional<int64_t>> already = std::optional<int64_t>(0);
    if (ss && !columns(db, "src", "merged_hosts").empty())
      already = query_int(db, "SELECT count(*) FROM src.merged_hosts WHERE session_id = " + std::to_string(ss->id));
    (void)exec_sql(db, "DETACH DATABASE src");
    if (!ss) return ss.error();
    if (already && already->value_or(0) > 0)
      return make_error("merge_usage", s.path + " is itself a merged DB: merge the hosts' own DBs (its merged_hosts "
                                                "table names them)");
    const std::string key = ss->host + "|" + ss->boot_id + "|" + std::to_string(ss->started_ns);
    if (auto it = seen_session.find(key); it != seen_session.end())
      return make_error("merge_duplicate", s.path + " holds the same session as " + it->second + " (host " + ss->host +
                                               ", started " + std::to_string(ss->started_ns) + "): it would be counted twice");
    seen_session[key] = s.path;
    s.host = ss->host;
    s.source_session_id = ss->id;
    s.started_ns = ss->started_ns;
    s.clock_offset_ns = ss->clock_offset_ns;
    if (s.schema_version < latest_schema_version())
      out.notes.push_back(s.path + ": schema version " + std::to_string(s.schema_version) + " migrated in the copy to " +
                          std::to_string(latest_schema_version()) + " (columns it lacks are NULL)");
    sessions.push_back(*ss);
  }
  return sessions;
}

// The merged session row: every host's span, rolled up to the second all of them reached.
// Returns that second (rollups past it are rebuilt from events).
Result<int64_t> insert_merged_session(sqlite3* db, const std::vector<SourceSession>& sessions, MergeSummary& out) {
  int64_t rolled = INT64_MAX, started = INT64_MAX, stopped = 0;
  std::string hosts;
  for (const SourceSession& ss : sessions) {
    rolled = std::min(rolled, ss.rolled_up_to_ns);
    started = std::min(started, ss.started_ns);
    stopped = std::max(stopped, ss.stopped_ns);
    hosts += (hosts.empty() ? "" : ",") + ss.host;
  }
  const int64_t rolled_sec = rolled / 1'000'000'000;
  auto ins = Statement::prepare(db,
                                "INSERT INTO sessions (source_kind, label, host, tool_version, started_ns, stopped_ns, "
                                "rolled_up_to_ns, system) VALUES ('import', ?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!ins) return ins.error();
  std::string label = "merge of " + std::to_string(sessions.size()) + " hosts:";
  for (const MergeInputSummary& s : out.inputs) label += " " + fs::path(s.path).filename().string();
  ins->bind(1, label);
  ins->bind(2, hosts);
  ins->bind(3, std::string_view(CAUSEWAY_VERSION));
  ins->bind(4, started);
  ins->bind(5, stopped ? stopped : started);
  ins->bind(6, rolled_sec * 1'000'000'000);
  ins->bind(7, nlohmann::json{{"hostname", hosts},
                              {"kernel", nullptr},
                              {"cpus", nullptr},
                              {"gpus", nlohmann::json::array()},
                              {"driver", nullptr},
                              {"driver_reason", "merged session: see systems (one per host)"},
                              {"merged", true}}
                   .dump());
  if (ins->step() != SQLITE_DONE) return make_error("db_write", sqlite_error_text(db));
  out.session_id = sqlite3_last_insert_rowid(db);
  return rolled_sec;
}

// Pass 2: every input's rows, events into temp.ev_stage.
Result<void> copy_merge_inputs(sqlite3* db, const std::vector<SourceSession>& sessions, int64_t rolled_sec, MergeSummary& out) {
  if (auto r = exec_sql(db, "CREATE TEMP TABLE ev_stage AS SELECT * FROM main.events WHERE 0"); !r) return r.error();
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    MergeInputSummary& s = out.inputs[i];
    const int k = static_cast<int>(i) + 1;
    s.pid_base = k * kMergedPidStride;
    // ATTACH and DETACH are refused inside a transaction: one transaction per input (the
    // output is a temporary file until the end, so a failure leaves nothing behind).
    if (auto r = attach_source(db, s.path); !r) return r.error();
    if (auto r = exec_sql(db, "BEGIN"); !r) return r.error();
    auto r = merge_one(db, out.session_id, k, s.path, sessions[i], s.sha256, rolled_sec, s);
    if (!r) return r.error();
    if (auto c = exec_sql(db, "COMMIT"); !c) return c.error();
    if (auto d = exec_sql(db, "DETACH DATABASE src"); !d) return d.error();
    out.events += s.events;
  }
  return {};
}

// The staged events of all hosts written in time order, with their zone map (event_blocks).
Result<void> write_staged_events(sqlite3* db, int64_t session_id) {
  auto cols = columns(db, "main", "events");
  std::string list;
  for (const std::string& c : cols)
    if (c != "id") list += (list.empty() ? "" : ", ") + c;
  std::string sql = "BEGIN; INSERT INTO main.events (" + list + ") SELECT " + list +
                    " FROM temp.ev_stage ORDER BY ts_ns; DROP TABLE temp.ev_stage;";
  if (auto r = exec_sql(db, sql); !r) return make_error("db_write", "writing the merged events: " + r.error().message);
  if (auto r = rebuild_event_blocks(db, session_id, kEventsPerLaidOutBlock); !r) {
    (void)exec_sql(db, "ROLLBACK");
    return r;
  }
  return exec_sql(db, "COMMIT");
}

}  // namespace

Result<MergeSummary> merge_trace_dbs(const std::string& out_path, const std::vector<std::string>& inputs) {
  if (inputs.empty()) return make_error("merge_usage", "no input DB given");
  // Root merging into a user's folder works there as that user, inputs read included
  // (docs/SECURITY.md): the output's folder is theirs to redirect.
  auto as = write_identity_for(out_path);
  if (!as) return as.error();
  auto scope = AsFsUser::enter(*as);
  if (!scope) return scope.error();
  std::error_code ec;
  if (fs::exists(out_path, ec))
    return make_error("merge_usage", out_path + " exists: merge writes a new DB and never overwrites one");
  MergeSummary out;
  auto checked = check_merge_inputs(inputs);
  if (!checked) return checked.error();
  out.inputs = std::move(*checked);

  const std::string tmp = out_path + ".tmp";
  struct Cleanup {
    const std::string& path;
    bool keep = false;
    ~Cleanup() {
      std::error_code e;
      if (!keep) fs::remove(path, e);
    }
  } cleanup{tmp};
  auto db = create_merge_output(tmp);
  if (!db) return db.error();
  auto sessions = read_merge_sessions(db->get(), out);
  if (!sessions) return sessions.error();
  auto rolled_sec = insert_merged_session(db->get(), *sessions, out);
  if (!rolled_sec) return rolled_sec.error();
  // Events of all hosts are staged, then written in time order: readers walk events by id
  // (the zone map assumes ids nearly follow time), so one host's rows may not all come first.
  if (auto r = copy_merge_inputs(db->get(), *sessions, *rolled_sec, out); !r) return r.error();
  if (auto r = write_staged_events(db->get(), out.session_id); !r) return r.error();
  // Clocks: every host wrote CLOCK_REALTIME, so the timelines line up as far as the hosts'
  // clocks agree; nothing here can measure that, so it is assumed and said.
  out.notes.push_back(
      "timestamps kept as each host's CLOCK_REALTIME (Unix ns); assumed skew between hosts: 0 — valid to the hosts' "
      "NTP/PTP error (typically 0.1-10 ms with NTP, < 1 us with PTP); cross-host lateness smaller than that is not "
      "evidence");
  db->reset();
  fs::rename(tmp, out_path, ec);
  if (ec) return make_error("db_write", "cannot rename " + tmp + " to " + out_path + ": " + ec.message());
  cleanup.keep = true;
  ::chmod(out_path.c_str(), 0600);
  return out;
}

}  // namespace causeway
