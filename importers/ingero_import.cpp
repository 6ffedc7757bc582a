#include "importers/ingero_import.h"

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "common/untrusted_json.h"
#include "importers/ingero_ops.h"
#include "importers/ingero_source.h"
#include "tracedb/store_writer.h"

namespace causeway {
namespace {

// A column of the events table, or 0 where this file's version lacks it.
std::string col(const IngeroLayout& l, const std::string& name) { return l.has(name) ? name : "0"; }

// ingero's resolved frames ([{"s":sym,"f":module,"i":ip} or {"pfn","pf","pl"} for Python])
// as our strings "module!symbol" / "python!function (file:line)", innermost first.
std::vector<std::string> convert_frames(const std::string& frames_json, const std::string& ips_json) {
  std::vector<std::string> out;
  auto frames = parse_untrusted_json_or_null(frames_json);
  if (frames.is_array()) {
    for (const auto& f : frames) {
      if (!f.is_object()) continue;
      auto str = [&](const char* k) { return f.contains(k) && f[k].is_string() ? f[k].get<std::string>() : ""; };
      if (f.contains("pfn")) {
        std::string s = "python!" + str("pfn");
        if (!str("pf").empty())
          s += " (" + str("pf") + (f.contains("pl") && f["pl"].is_number() ? ":" + std::to_string(f["pl"].get<int64_t>()) : "") + ")";
        out.push_back(std::move(s));
      } else {
        std::string sym = str("s").empty() ? str("i") : str("s");
        out.push_back((str("f").empty() ? "?" : str("f")) + "!" + (sym.empty() ? "?" : sym));
      }
    }
    if (!out.empty()) return out;
  }
  auto ips = parse_untrusted_json_or_null(ips_json);
  if (ips.is_array())
    for (const auto& ip : ips)
      if (ip.is_string()) out.push_back("?!" + ip.get<std::string>());
  return out;
}

SessionInfo session_info(sqlite3* h, const IngeroLayout& l, const std::string& file) {
  SessionInfo info;
  info.source_kind = "import";
  info.label = std::filesystem::path(file).filename().string();
  if (l.has_sessions) {
    auto s = Statement::prepare(h, "SELECT " + std::string(l.session_columns.count("kernel") ? "kernel" : "''") + ", " +
                                       (l.session_columns.count("gpu_model") ? "gpu_model" : "''") + ", " +
                                       (l.session_columns.count("gpu_driver") ? "gpu_driver" : "''") + ", " +
                                       (l.session_columns.count("cuda_ver") ? "cuda_ver" : "''") +
                                       " FROM sessions ORDER BY started_at LIMIT 1");
    if (s && s->step() == SQLITE_ROW) {
      info.kernel = s->col_text(0);
      info.gpus = s->col_text(1);
      info.driver_version = s->col_text(2);
      info.cuda_version = s->col_text(3);
    }
  }
  if (l.has("node")) {
    auto s = Statement::prepare(h, "SELECT DISTINCT node FROM events WHERE node != '' ORDER BY node");
    if (s)
      while (s->step() == SQLITE_ROW) info.host += (info.host.empty() ? "" : ",") + s->col_text(0);
  }
  return info;
}

// Every (source, op) pair the file uses, mapped before anything is written.
struct IngeroUsedOp {
  std::string key;  // "SOURCE/op" as the file names it
  OpMapping map;
  uint16_t id = 0;
};
using IngeroUsedOps = std::map<std::pair<int64_t, int64_t>, IngeroUsedOp>;

Result<IngeroUsedOps> ingero_used_ops(const IngeroSource& src) {
  sqlite3* h = src.db();
  IngeroUsedOps used;
  auto st = Statement::prepare(h, "SELECT DISTINCT source, op FROM events");
  if (!st) return make_error("import_foreign", "cannot read the file's events: " + st.error().message);
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    int64_t s = st->col_int(0), o = st->col_int(1);
    auto sn = src.source_names().find(s);
    std::string sname = sn != src.source_names().end() ? sn->second : "src" + std::to_string(s);
    auto on = src.op_names().find({s, o});
    // An op the file's dictionary does not name is kept under a synthetic name, not dropped.
    std::string oname = on != src.op_names().end() ? on->second : sname + "_op" + std::to_string(o);
    used[{s, o}] = {sname + "/" + oname, map_ingero_op(sname, oname), 0};
  }
  if (rc != SQLITE_DONE) return make_error("import_foreign", "cannot read the file's events: " + sqlite_error_text(h));
  return used;
}

// The span of the file's events into sum.first_ns / last_ns.
void ingero_time_span(sqlite3* h, ImportSummary& sum) {
  auto r = query_int(h, "SELECT min(timestamp) FROM events");
  if (r && *r) sum.first_ns = **r;
  auto e = query_int(h, "SELECT max(timestamp + max(duration, 0)) FROM events");
  // Host and I/O events are stamped at their end: the earliest start may precede the first stamp.
  auto s = query_int(h, "SELECT min(timestamp - max(duration, 0)) FROM events");
  if (s && *s && **s < sum.first_ns) sum.first_ns = **s;
  if (e && *e) sum.last_ns = **e;
}

// The imported session, then the ops it uses (their ids in this DB go into `used`).
Result<void> begin_ingero_session(StoreWriter& w, sqlite3* h, const IngeroLayout& l, const std::string& file,
                                  IngeroUsedOps& used, ImportSummary& sum) {
  SessionInfo info = session_info(h, l, file);
  info.started_ns = sum.first_ns;
  if (l.has_sessions) {
    auto s = query_int(h, "SELECT min(started_at) FROM sessions WHERE started_at > 0");
    if (s && *s && (info.started_ns == 0 || **s < info.started_ns)) info.started_ns = **s;
  }
  auto sid = w.begin_session(info);
  if (!sid) return sid.error();
  sum.session_id = *sid;
  for (auto& [k, u] : used) {
    auto id = w.ensure_op(u.map.source, u.map.name, u.map.is_call, u.map.arg_names);
    if (!id) return id.error();
    u.id = *id;
    if (!u.map.in_catalog) sum.kept_by_name.push_back(u.map.source + "/" + u.map.name);
  }
  return {};
}

// Processes: per-pid first/last seen and the file's names, plus named processes with no
// events of their own (e.g. the other end of a wakeup).
Result<void> push_ingero_processes(StoreWriter& w, sqlite3* h, const std::map<int64_t, std::string>& names, ImportSummary& sum) {
  auto st = Statement::prepare(h, "SELECT pid, min(timestamp), max(timestamp) FROM events WHERE pid != 0 GROUP BY pid");
  if (!st) return st.error();
  std::set<int64_t> seen;
  while (st->step() == SQLITE_ROW) {
    ProcessRecord p;
    p.pid = static_cast<uint32_t>(st->col_int(0));
    p.first_ns = st->col_int(1);
    p.last_ns = st->col_int(2);
    if (auto n = names.find(p.pid); n != names.end()) p.comm = n->second;
    seen.insert(p.pid);
    w.push_meta(std::move(p));
    ++sum.processes;
  }
  for (const auto& [pid, name] : names)
    if (!seen.count(pid) && pid != 0) {
      ProcessRecord p;
      p.pid = static_cast<uint32_t>(pid);
      p.comm = name;
      w.push_meta(std::move(p));
      ++sum.processes;
    }
  return {};
}

Result<void> push_ingero_threads(StoreWriter& w, sqlite3* h, const std::map<int64_t, std::string>& names, ImportSummary& sum) {
  auto st = Statement::prepare(h, "SELECT tid, max(pid) FROM events WHERE tid != 0 GROUP BY tid");
  if (!st) return st.error();
  while (st->step() == SQLITE_ROW) {
    ThreadRecord t;
    t.tid = static_cast<uint32_t>(st->col_int(0));
    t.pid = static_cast<uint32_t>(st->col_int(1));
    // ingero names processes only; a thread that is not its process's main one stays unnamed
    // unless the file named its id.
    if (auto n = names.find(t.tid); n != names.end()) t.comm = n->second;
    w.push_meta(std::move(t));
    ++sum.threads;
  }
  return {};
}

// Identity: process names, processes, threads, stacks; the count of the file's own chains.
Result<void> push_ingero_identity(StoreWriter& w, sqlite3* h, const IngeroLayout& l, ImportSummary& sum) {
  std::map<int64_t, std::string> names;
  if (l.has_process_names) {
    auto st = Statement::prepare(h, "SELECT pid, name FROM process_names");
    if (st)
      while (st->step() == SQLITE_ROW) names[st->col_int(0)] = st->col_text(1);
  }
  if (auto r = push_ingero_processes(w, h, names, sum); !r) return r;
  if (auto r = push_ingero_threads(w, h, names, sum); !r) return r;
  if (l.has("node")) {
    auto r = query_int(h, "SELECT count(*) FROM (SELECT pid FROM events WHERE pid != 0 GROUP BY pid HAVING count(DISTINCT node) > 1)");
    if (r && *r && **r > 0)
      sum.warnings.push_back(std::to_string(**r) + " pid(s) occur on more than one node of this merged file; "
                             "their events share one process in the imported session");
  }
  if (l.has_stacks) {
    auto st = Statement::prepare(h, "SELECT hash, frames, ips FROM stack_traces");
    if (st)
      while (st->step() == SQLITE_ROW) {
        StackRecord s;
        s.hash = static_cast<uint64_t>(st->col_int(0));
        s.frames = convert_frames(st->col_text(1), st->col_text(2));
        w.push_meta(std::move(s));
        ++sum.stacks;
      }
  }
  auto r = query_int(h, "SELECT count(*) FROM causal_chains");
  if (r && *r) sum.source_chains = static_cast<uint64_t>(**r);
  return {};
}

// The events, streamed in time order (the file has a timestamp index).
Result<void> push_ingero_events(StoreWriter& w, sqlite3* h, const IngeroLayout& l, const IngeroUsedOps& used, ImportSummary& sum) {
  const std::string sql = "SELECT timestamp, duration, pid, tid, source, op, " + col(l, "arg0") + ", " + col(l, "arg1") +
                          ", " + col(l, "ret_code") + ", " + col(l, "stack_hash") + ", " + col(l, "cgroup_id") +
                          " FROM events ORDER BY timestamp";
  auto st = Statement::prepare(h, sql);
  if (!st) return st.error();
  int rc;
  std::pair<int64_t, int64_t> last_key{-1, -1};
  const IngeroUsedOp* u = nullptr;
  while ((rc = st->step()) == SQLITE_ROW) {
    IngeroRow row;
    row.ts_ns = st->col_int(0);
    row.dur_ns = st->col_int(1);
    row.pid = st->col_int(2);
    row.tid = st->col_int(3);
    std::pair<int64_t, int64_t> key{st->col_int(4), st->col_int(5)};
    row.arg0 = st->col_int(6);
    row.arg1 = st->col_int(7);
    row.ret = st->col_int(8);
    row.stack_hash = st->col_int(9);
    row.cgroup_id = st->col_int(10);
    if (key != last_key) {
      u = &used.at(key);
      last_key = key;
    }
    w.push_wait(to_call_record(u->map, u->id, row));
    ++sum.per_op[u->key];
    ++sum.events;
  }
  if (rc != SQLITE_DONE)
    return make_error("import_foreign", "reading the file's events failed after " + std::to_string(sum.events) +
                                            " rows: " + sqlite_error_text(h));
  return {};
}

}  // namespace

Result<ImportSummary> import_ingero(const std::string& file, const std::string& db_path) {
  const auto t0 = std::chrono::steady_clock::now();
  auto src = IngeroSource::open(file);
  if (!src) return src.error();
  sqlite3* h = src->db();
  const IngeroLayout& l = src->layout();
  ImportSummary sum;
  auto used = ingero_used_ops(*src);
  if (!used) return used.error();
  ingero_time_span(h, sum);

  auto writer = StoreWriter::open(db_path, WriterOptions{.holder = "causeway import"});
  if (!writer) return writer.error();
  StoreWriter& w = **writer;
  if (auto r = begin_ingero_session(w, h, l, file, *used, sum); !r) return r.error();
  if (auto r = push_ingero_identity(w, h, l, sum); !r) return r.error();
  if (auto r = push_ingero_events(w, h, l, *used, sum); !r) {
    (void)w.close(sum.last_ns);
    return r.error();
  }
  w.set_counter("imported_events", static_cast<int64_t>(sum.events));
  w.set_counter("imported_source_chains", static_cast<int64_t>(sum.source_chains));
  int64_t stopped = sum.last_ns;
  if (l.has_sessions) {
    auto s = query_int(h, "SELECT max(stopped_at) FROM sessions");
    if (s && *s && **s > stopped) stopped = **s;
  }
  if (auto r = w.close(stopped); !r) return r.error();
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

}  // namespace causeway
