#include "exporters/perfetto_export.h"

#include <array>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "diagnosis/event_window.h"
#include "diagnosis/frames.h"
#include "diagnosis/session_scope.h"
#include "diagnosis/thread_timeline.h"
#include "common/sanitize.h"
#include "common/untrusted_json.h"
#include "exporters/trace_event_writer.h"
#include "tracedb/event_columns.h"
#include "tracedb/op_args.h"
#include "tracedb/open.h"

namespace causeway {
namespace {

using json = nlohmann::json;

// Synthetic thread ids for chain tracks: above any kernel pid_max (2^22), so they never
// collide with a real thread; two per chain (victim side, culprit side).
constexpr uint32_t kChainTrackBase = 1'000'000'000;
// Imported off-CPU intervals go on a track of their own beside the thread's (tid + this):
// their stamps come from a tracepoint and the calls' from uprobes of another tool, and on
// real traces a few straddle a call's end by microseconds, which a single thread track
// cannot show (Perfetto requires slices on one track to nest).
constexpr uint32_t kImportedOffCpuBase = 2'000'000'000;
// Open collectives kept for cross-rank arrows; past this (ranks never all seen, e.g. a
// single-node view of a multi-node job) the oldest are forgotten.
constexpr size_t kMaxOpenCollectives = 200'000;

struct OpDesc {
  std::string name, source;
  bool is_call = false;
  std::vector<std::string> args;  // a0..a5 names ("" = unused)
  bool collective = false;
};

// One event's generic args a0..a5, read through the typed views of tracedb/op_args.h.
struct PerfettoArgRow {
  std::array<int64_t, 6> a{};
};

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

bool hex_arg(const std::string& name) {
  for (const char* k : {"ptr", "function", "stream", "hash", "event"})
    if (name.find(k) != std::string::npos) return true;
  return false;
}

std::string hex(int64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

class Exporter {
 public:
  Exporter(sqlite3* db, const ExportOptions& o, const SessionScope& sc) : db_(db), o_(o), sc_(sc) {}

  Result<ExportSummary> run() {
    const auto t0 = std::chrono::steady_clock::now();
    sum_.session_id = sc_.session_id;
    if (auto r = load_dictionaries(); !r) return r.error();
    auto w = TraceEventWriter::open(o_.out_path, sc_.from_ns, other_data());
    if (!w) return w.error();
    w_ = std::move(*w);
    if (auto r = export_events(); !r) return r.error();
    if (auto r = export_sched(); !r) return r.error();
    if (auto r = export_chains(); !r) return r.error();
    sum_.trace_events = w_->events();
    auto bytes = w_->finish();
    if (!bytes) return bytes.error();
    sum_.bytes = *bytes;
    sum_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum_;
  }

 private:
  sqlite3* db_;
  std::unordered_map<int64_t, std::string> python_stacks_;  // stack id → its Python frames
  const ExportOptions& o_;
  SessionScope sc_;
  std::unique_ptr<TraceEventWriter> w_;
  ExportSummary sum_;
  std::unordered_map<uint16_t, OpDesc> ops_;
  std::unordered_map<uint32_t, std::string> proc_comm_;
  std::unordered_map<uint32_t, std::pair<uint32_t, std::string>> threads_;  // tid -> (pid, comm)
  std::unordered_set<uint32_t> traced_pids_;
  std::unordered_set<uint32_t> named_pids_;
  std::set<std::pair<uint32_t, uint32_t>> named_threads_;
  std::unordered_set<uint32_t> ranked_pids_;
  uint64_t next_id_ = 1;
  struct OpenCollective {
    uint32_t pid, tid;
    int64_t mid_ns;
    int seen;
    int nranks;
  };
  std::map<std::pair<int64_t, int64_t>, OpenCollective> open_coll_;
  std::set<std::pair<int64_t, int64_t>> coll_seen_;

  std::string other_data() {
    json d = {{"tool", "causeway"}, {"session_id", sc_.session_id}, {"origin_unix_ns", sc_.from_ns},
              {"from_unix_ns", sc_.from_ns}, {"to_unix_ns", sc_.to_ns},
              {"note", "ts are microseconds since origin_unix_ns"}};
    auto st = Statement::prepare(db_, "SELECT source_kind, label, host, kernel, gpus FROM sessions WHERE id = ?");
    if (st) {
      st->bind(1, sc_.session_id);
      if (st->step() == SQLITE_ROW) {
        d["source_kind"] = st->col_text(0);
        d["label"] = sanitize_untrusted(st->col_text(1), 200);
        d["host"] = sanitize_untrusted(st->col_text(2), 200);
        d["kernel"] = st->col_text(3);
        d["gpus"] = sanitize_untrusted(st->col_text(4), 200);
      }
    }
    return dump(d);
  }

  Result<void> load_dictionaries() {
    auto st = Statement::prepare(db_, "SELECT id, name, source, kind, arg_names FROM ops");
    if (!st) return st.error();
    while (st->step() == SQLITE_ROW) {
      OpDesc d;
      d.name = sanitize_untrusted(st->col_text(1), 128);  // ops.name may come from an imported file
      d.source = sanitize_untrusted(st->col_text(2), 64);
      d.is_call = st->col_text(3) == "call";
      std::string names = st->col_text(4);
      size_t pos = 0;
      while (d.args.size() < 6) {
        size_t c = names.find(',', pos);
        d.args.push_back(names.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
        if (c == std::string::npos) break;
        pos = c + 1;
      }
      d.args.resize(6);
      d.collective = d.source == "nccl" && d.args[1] == "comm_hash" && d.args[4] == "seq";
      ops_[static_cast<uint16_t>(st->col_int(0))] = std::move(d);
    }
    auto p = Statement::prepare(db_, "SELECT pid, comm FROM processes WHERE session_id = ?");
    if (!p) return p.error();
    p->bind(1, sc_.session_id);
    while (p->step() == SQLITE_ROW) proc_comm_[static_cast<uint32_t>(p->col_int(0))] = p->col_text(1);
    auto t = Statement::prepare(db_, "SELECT tid, pid, comm FROM threads WHERE session_id = ?");
    if (!t) return t.error();
    t->bind(1, sc_.session_id);
    while (t->step() == SQLITE_ROW)
      threads_[static_cast<uint32_t>(t->col_int(0))] = {static_cast<uint32_t>(t->col_int(1)), t->col_text(2)};
    // Traced processes: those with GPU calls (rollups hold one row per op x pid x second).
    auto r = Statement::prepare(db_,
                                "SELECT DISTINCT r.pid FROM rollups r JOIN ops o ON o.id = r.op_id "
                                "WHERE r.session_id = ? AND o.source IN ('cuda', 'driver', 'nccl')");
    if (!r) return r.error();
    r->bind(1, sc_.session_id);
    while (r->step() == SQLITE_ROW) traced_pids_.insert(static_cast<uint32_t>(r->col_int(0)));
    return {};
  }

  std::string comm_of(uint32_t pid) const {
    if (pid == 0) return "idle";
    auto it = proc_comm_.find(pid);
    if (it != proc_comm_.end() && !it->second.empty()) return sanitize_untrusted(it->second, 64);
    auto t = threads_.find(pid);
    if (t != threads_.end() && !t->second.second.empty()) return sanitize_untrusted(t->second.second, 64);
    return "pid " + std::to_string(pid);
  }

  void ensure_process(uint32_t pid, const std::string& fallback = "") {
    if (!named_pids_.insert(pid).second) return;
    std::string comm = comm_of(pid);
    if (comm.rfind("pid ", 0) == 0 && !fallback.empty()) comm = sanitize_untrusted(fallback, 64);
    w_->process_name(pid, comm + " (pid " + std::to_string(pid) + ")");
    ++sum_.processes;
  }

  void ensure_thread(uint32_t pid, uint32_t tid) {
    ensure_process(pid);
    if (!named_threads_.insert({pid, tid}).second) return;
    std::string name;
    auto t = threads_.find(tid);
    if (t != threads_.end() && !t->second.second.empty()) name = sanitize_untrusted(t->second.second, 64);
    else if (tid == pid) name = comm_of(pid);
    else name = "thread";
    w_->thread_name(pid, tid, name + " (tid " + std::to_string(tid) + ")");
    ++sum_.threads;
  }

  json call_args(const OpDesc& d, const std::array<int64_t, 6>& a, const std::array<bool, 6>& has, int64_t ret,
                 std::optional<int64_t> stack) {
    json args = json::object();
    for (int i = 0; i < 6; ++i) {
      const std::string& n = d.args[i];
      if (n.empty() || !has[i]) continue;
      if (n == "datatype|redop<<8|peer<<16") {
        args["datatype"] = a[i] & 255;
        args["redop"] = (a[i] >> 8) & 255;
        args["peer"] = a[i] >> 16;
      } else if (hex_arg(n)) {
        args[n] = hex(a[i]);
      } else {
        args[n] = a[i];
      }
    }
    if (ret) args["ret"] = ret;
    if (stack) {
      args["stack_id"] = std::to_string(*stack);
      if (const std::string& py = python_stack(*stack); !py.empty()) args["python"] = py;
    }
    return args;
  }

  // The Python frames of a stack, innermost first ("train.py:142 (step) <- train.py:201 (main)"),
  // "" when it has none; looked up once per stack.
  const std::string& python_stack(int64_t id) {
    auto [it, inserted] = python_stacks_.try_emplace(id);
    if (!inserted) return it->second;
    auto st = Statement::prepare(db_, "SELECT frames FROM stacks WHERE id = ?1");
    if (!st) return it->second;
    st->bind(1, id);
    if (st->step() != SQLITE_ROW) return it->second;
    const json j = parse_untrusted_json_or_null(st->col_text(0));
    if (!j.is_array()) return it->second;
    std::vector<std::string> texts;
    for (const auto& f : j)
      if (f.is_string()) texts.push_back(f.get<std::string>());
    for (const Frame& f : parse_stack(texts).frames)
      if (f.kind == FrameKind::python) it->second += (it->second.empty() ? "" : " <- ") + sanitize_untrusted(f.text, 200);
    return it->second;
  }

  void collective(const OpDesc& d, uint32_t pid, uint32_t tid, int64_t ts, int64_t dur, const CollArgs& c) {
    const std::pair<int64_t, int64_t> key{c.comm, c.seq};
    if (coll_seen_.size() < kMaxOpenCollectives * 4 && coll_seen_.insert(key).second) ++sum_.collectives;
    if (ranked_pids_.insert(pid).second && c.rank >= 0) {
      // Ranks in order down the timeline, labelled, so one collective lines up across them.
      w_->process_sort_index(pid, c.rank);
      w_->process_labels(pid, "rank " + std::to_string(c.rank) + " of " + std::to_string(c.nranks));
    }
    if (o_.pid) return;  // one rank alone has nothing to align with
    const int64_t mid = ts + dur / 2;
    auto it = open_coll_.find(key);
    if (it == open_coll_.end()) {
      if (open_coll_.size() >= kMaxOpenCollectives) open_coll_.erase(open_coll_.begin());
      open_coll_[key] = {pid, tid, mid, 1, c.nranks};
      return;
    }
    OpenCollective& oc = it->second;
    w_->flow(next_id_++, d.name + " #" + std::to_string(c.seq), "nccl_collective", oc.pid, oc.tid, oc.mid_ns, pid, tid, mid);
    ++sum_.flows;
    if (++oc.seen >= oc.nranks && oc.nranks > 0) open_coll_.erase(it);
  }

  Result<void> export_events() {
    auto ids = event_ids_for_window(db_, sc_.session_id, sc_.from_ns, sc_.to_ns);
    if (!ids) return ids.error();
    if (ids->empty()) return {};
    auto st = Statement::prepare(db_,
                                 "SELECT " + event_select_list() +
                                     " FROM events WHERE session_id = ?1 AND id BETWEEN ?2 AND ?3 AND ts_ns BETWEEN ?4 AND ?5 "
                                 "AND (?6 IS NULL OR pid = ?6) ORDER BY id");
    if (!st) return st.error();
    st->bind(1, sc_.session_id);
    st->bind(2, ids->lo);
    st->bind(3, ids->hi);
    st->bind(4, sc_.from_ns);
    st->bind(5, sc_.to_ns);
    if (o_.pid) st->bind(6, int64_t{*o_.pid});
    else st->bind_null(6);
    static const OpDesc kUnknown{"unknown_op", "host", false, std::vector<std::string>(6), false};
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) {
      const int64_t ts = st->col_int(col(EventCol::ts_ns)), dur = st->col_int(col(EventCol::dur_ns));
      const auto pid = static_cast<uint32_t>(st->col_int(col(EventCol::pid)));
      const auto tid = static_cast<uint32_t>(st->col_int(col(EventCol::tid)));
      const auto op = static_cast<uint16_t>(st->col_int(col(EventCol::op_id)));
      const int64_t ret = st->col_int(col(EventCol::ret));
      PerfettoArgRow row;
      std::array<int64_t, 6>& a = row.a;
      std::array<bool, 6> has{};
      for (int i = 0; i < 6; ++i) {
        has[i] = !st->col_null(arg_col(i));
        a[i] = st->col_int(arg_col(i));
      }
      std::optional<int64_t> stack;
      if (!st->col_null(col(EventCol::stack_id))) stack = st->col_int(col(EventCol::stack_id));
      auto oi = ops_.find(op);
      const OpDesc& d = oi != ops_.end() ? oi->second : kUnknown;
      ensure_thread(pid, tid);
      if (d.source == "io") {
        w_->async_slice(pid, tid, next_id_++, ts, dur, d.name, "io", dump(call_args(d, a, has, ret, stack)));
        ++sum_.async_slices;
      } else if (d.name == "sched_switch" && dur > 0) {
        // An imported off-CPU interval (ingero): the thread's own, without state or next task.
        json args = {{"state", "unknown (imported)"}, {"tid", tid}, {"off_cpu_us", static_cast<double>(dur) / 1000.0}};
        const uint32_t track = kImportedOffCpuBase + tid;
        if (named_threads_.insert({pid, track}).second) {
          w_->thread_name(pid, track, "off-CPU of tid " + std::to_string(tid) + " (imported)");
          ++sum_.threads;
        }
        w_->slice(pid, track, ts, dur, "off-CPU", "sched", dump(args), "grey");
        ++sum_.off_cpu_slices;
      } else if (d.is_call) {
        const CollArgs c = coll_args(row);
        std::string name = d.collective ? d.name + " #" + std::to_string(c.seq) : d.name;
        w_->slice(pid, tid, ts, dur, name, d.source, dump(call_args(d, a, has, ret, stack)));
        ++sum_.call_slices;
        if (d.collective) collective(d, pid, tid, ts, dur, c);
      } else {
        w_->instant(pid, tid, ts, d.name, d.source, dump(call_args(d, a, has, ret, stack)));
        ++sum_.instants;
      }
    }
    if (rc != SQLITE_DONE) return make_error("db_read", "reading events failed: " + sqlite_error_text(db_));
    return {};
  }

  bool traced(uint32_t pid) const { return traced_pids_.empty() ? pid != 0 : traced_pids_.count(pid) > 0; }

  Result<void> export_sched() {
    auto st = Statement::prepare(db_,
                                 "SELECT ts_ns, cpu, prev_tid, prev_pid, prev_state, next_tid, next_pid FROM sched "
                                 "WHERE session_id = ?1 AND ts_ns BETWEEN ?2 AND ?3 ORDER BY ts_ns");
    if (!st) return st.error();
    st->bind(1, sc_.session_id);
    st->bind(2, sc_.from_ns);
    st->bind(3, sc_.to_ns);
    struct Open {
      int64_t from;
      uint32_t pid;
      int32_t cpu;
      int64_t state;
      uint32_t next_pid, next_tid;
    };
    std::unordered_map<uint32_t, Open> open;  // by tid: at most one per traced thread
    auto close = [&](uint32_t tid, const Open& o, int64_t to, int32_t in_cpu) {
      ensure_thread(o.pid, tid);
      OffCpuState s = off_cpu_state(o.state);
      const char* why = s == OffCpuState::runnable ? "R, preempted"
                        : s == OffCpuState::sleeping ? "S, sleeping"
                        : s == OffCpuState::uninterruptible ? "D, uninterruptible" : "other";
      json args = {{"state", state_letter(s)}, {"cpu", o.cpu},
                   {"next", comm_of(o.next_pid) + " (pid " + std::to_string(o.next_pid) + ", tid " +
                                std::to_string(o.next_tid) + ")"}};
      if (in_cpu >= 0) args["back_on_cpu"] = in_cpu;
      w_->slice(o.pid, tid, o.from, to - o.from, std::string("off-CPU (") + why + ")", "sched", dump(args),
                s == OffCpuState::runnable ? "terrible" : "grey");
      ++sum_.off_cpu_slices;
    };
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) {
      const int64_t ts = st->col_int(0);
      const auto cpu = static_cast<int32_t>(st->col_int(1));
      const auto prev_tid = static_cast<uint32_t>(st->col_int(2)), prev_pid = static_cast<uint32_t>(st->col_int(3));
      const int64_t prev_state = st->col_int(4);
      const auto next_tid = static_cast<uint32_t>(st->col_int(5)), next_pid = static_cast<uint32_t>(st->col_int(6));
      if (auto it = open.find(next_tid); next_tid != 0 && it != open.end()) {
        close(next_tid, it->second, ts, cpu);
        open.erase(it);
      }
      if (prev_tid != 0 && traced(prev_pid) && (!o_.pid || prev_pid == *o_.pid)) {
        // A switch-out while already out means a record was lost: close the stale interval.
        if (auto it = open.find(prev_tid); it != open.end()) close(prev_tid, it->second, ts, -1);
        open[prev_tid] = {ts, prev_pid, cpu, prev_state, next_pid, next_tid};
      }
    }
    if (rc != SQLITE_DONE) return make_error("db_read", "reading sched failed: " + sqlite_error_text(db_));
    for (const auto& [tid, o] : open) close(tid, o, std::max(o.from, sc_.to_ns), -1);
    return {};
  }

  Result<void> export_chains() {
    auto st = Statement::prepare(db_,
                                 "SELECT id, severity, cause, summary, pid, from_ns, to_ns, doc, culprit_pid FROM chains "
                                 "WHERE session_id = ?1 AND to_ns >= ?2 AND from_ns <= ?3 "
                                 "AND (?4 IS NULL OR pid = ?4 OR culprit_pid = ?4) ORDER BY from_ns, id");
    if (!st) return st.error();
    st->bind(1, sc_.session_id);
    st->bind(2, sc_.from_ns);
    st->bind(3, sc_.to_ns);
    if (o_.pid) st->bind(4, int64_t{*o_.pid});
    else st->bind_null(4);
    uint32_t k = 0;
    int rc;
    while ((rc = st->step()) == SQLITE_ROW) {
      const std::string id = sanitize_untrusted(st->col_text(0), 64), severity = sanitize_untrusted(st->col_text(1), 16),
                        cause = sanitize_untrusted(st->col_text(2), 64);
      const std::string summary = sanitize_untrusted(st->col_text(3), 300);
      const auto pid = static_cast<uint32_t>(st->col_int(4));
      const int64_t from = st->col_int(5), to = std::max(st->col_int(6), st->col_int(5) + 1);
      json doc = sanitize_json_strings(parse_untrusted_json_or_null(st->col_text(7)), 4096);
      if (!doc.is_object()) doc = json::object();
      const uint32_t vt = kChainTrackBase + 2 * k, ct = vt + 1;
      ++k;
      ensure_process(pid);
      w_->thread_name(pid, vt, "chain " + std::to_string(k) + ": " + cause);
      json args = {{"id", id}, {"severity", severity}, {"cause", cause}};
      for (const char* f : {"evidence", "recommendation", "culprit", "calls", "p50_us", "p99_us", "op"})
        if (doc.contains(f)) args[f] = doc[f];
      const std::string_view color = severity_color(severity);
      w_->slice(pid, vt, from, to - from, "[" + severity + "] " + summary, "chain", dump(args), color);
      w_->instant(pid, vt, from, "[" + severity + "] " + cause, "chain", dump(json{{"id", id}}), color);
      ++sum_.instants;
      if (doc.contains("timeline") && doc["timeline"].is_array())
        for (const auto& t : doc["timeline"]) {
          if (!t.is_object() || !t.contains("ts_ns") || !t["ts_ns"].is_number_integer()) continue;
          std::string what = t.contains("what") && t["what"].is_string() ? t["what"].get<std::string>() : "";
          std::string layer = t.contains("layer") && t["layer"].is_string() ? t["layer"].get<std::string>() : "";
          w_->instant(pid, vt, t["ts_ns"].get<int64_t>(), sanitize_untrusted(what, 200), "chain." + layer, "", color);
          ++sum_.instants;
        }
      ++sum_.chains;
      if (st->col_null(8)) continue;
      const auto cpid = static_cast<uint32_t>(st->col_int(8));
      std::string ccomm = doc.contains("culprit") && doc["culprit"].contains("comm") && doc["culprit"]["comm"].is_string()
                              ? doc["culprit"]["comm"].get<std::string>() : "";
      ensure_process(cpid, ccomm);
      w_->thread_name(cpid, ct, "culprit of chain " + std::to_string(k));
      w_->slice(cpid, ct, from, to - from, "culprit: " + cause + " of " + comm_of(pid) + " (pid " + std::to_string(pid) + ")",
                "chain", dump(json{{"id", id}, {"victim_pid", pid}}), color);
      const int64_t mid = from + (to - from) / 2;
      w_->flow(next_id_++, cause, "chain", cpid, ct, mid, pid, vt, mid);
      ++sum_.flows;
    }
    if (rc != SQLITE_DONE) return make_error("db_read", "reading chains failed: " + sqlite_error_text(db_));
    return {};
  }
};

}  // namespace

Result<ExportSummary> export_perfetto(const ExportOptions& options) {
  auto db = open_read_only(options.db_path);
  if (!db) return db.error();
  auto scope = resolve_scope(db->get(), options.session_id, options.since_ns);
  if (!scope) return scope.error();
  Exporter e(db->get(), options, *scope);
  return e.run();
}

}  // namespace causeway
