#include "diagnosis/system_info.h"

#include "common/sanitize.h"
#include "common/untrusted_json.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

bool has_column(sqlite3* db, const char* table, const char* column) {
  auto st = Statement::prepare(db, std::string("SELECT 1 FROM pragma_table_info('") + table + "') WHERE name = ?1");
  if (!st) return false;
  st->bind(1, std::string_view(column));
  return st->step() == SQLITE_ROW;
}

// The document came from the traced host or from a DB file of unknown origin: depth- and
// size-limited, and its strings (hostname, CPU model, GPU names) sanitized for display.
nlohmann::json parse_or_null(const std::string& text) {
  return sanitize_json_strings(parse_untrusted_json_or_null(text), 128);
}

}  // namespace

Result<nlohmann::json> load_session_system(sqlite3* db, int64_t session_id) {
  const bool v3 = has_column(db, "sessions", "system");
  auto st = Statement::prepare(db, v3 ? "SELECT host, kernel, driver_version, source_kind, system FROM sessions WHERE id = ?1"
                                      : "SELECT host, kernel, driver_version, source_kind, NULL FROM sessions WHERE id = ?1");
  if (!st) return st.error();
  st->bind(1, session_id);
  if (st->step() != SQLITE_ROW) return make_error("no_data", "no session " + std::to_string(session_id));
  nlohmann::json sys = parse_or_null(st->col_text(4));
  if (sys.is_object()) return sys;
  // Not recorded (a session from before schema 3, or an import): what the row has, no more.
  const std::string kind = st->col_text(3);
  sys = {{"hostname", st->col_text(0).empty() ? nlohmann::json(nullptr) : nlohmann::json(st->col_text(0))},
         {"kernel", st->col_text(1).empty() ? nlohmann::json(nullptr) : nlohmann::json(st->col_text(1))},
         {"cpus", nullptr},
         {"gpus", nlohmann::json::array()},
         {"driver", st->col_text(2).empty() ? nlohmann::json(nullptr) : nlohmann::json(st->col_text(2))}};
  if (sys["driver"].is_null())
    sys["driver_reason"] = kind == "import" ? "imported trace: the source did not record the host"
                                            : "not recorded by the causeway that wrote this session";
  sys["recorded"] = false;
  return sanitize_json_strings(std::move(sys), 128);
}

Result<std::vector<HostSpan>> load_merged_hosts(sqlite3* db, int64_t session_id) {
  std::vector<HostSpan> out;
  auto exists = query_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'merged_hosts'");
  if (!exists) return exists.error();
  if (exists->value_or(0) == 0) return out;
  auto st = Statement::prepare(db,
                               "SELECT pid_base, host, system, host_index, source_file, clock_offset_ns, boot_id FROM merged_hosts "
                               "WHERE session_id = ?1 ORDER BY pid_base");
  if (!st) return st.error();
  st->bind(1, session_id);
  while (st->step() == SQLITE_ROW) {
    HostSpan h;
    h.pid_base = st->col_int(0);
    h.host = sanitize_untrusted(st->col_text(1), 128);
    h.system = parse_or_null(st->col_text(2));
    if (!h.system.is_object()) h.system = {{"hostname", h.host}};
    h.system["host_index"] = st->col_int(3);
    h.system["source_file"] = st->col_text(4);
    h.system["pid_base"] = h.pid_base;
    out.push_back(std::move(h));
  }
  return out;
}

namespace {

std::string describe(const nlohmann::json& sys) {
  auto text = [&](const char* k) { return sys.contains(k) && sys[k].is_string() ? sanitize_untrusted(sys[k].get<std::string>(), 80) : std::string(); };
  std::string out = "host " + (text("hostname").empty() ? std::string("(unknown)") : text("hostname"));
  if (sys.value("synthetic", false)) out += " (synthetic demo host)";
  out += ":";
  if (!text("kernel").empty()) out += " kernel " + text("kernel") + ",";
  if (sys.contains("cpus") && sys["cpus"].is_number_integer() && sys["cpus"].get<int64_t>() > 0)
    out += " " + std::to_string(sys["cpus"].get<int64_t>()) + " CPUs" + (text("cpu_model").empty() ? "" : " (" + text("cpu_model") + ")") + ",";
  if (sys.contains("memory_mb") && sys["memory_mb"].is_number_integer() && sys["memory_mb"].get<int64_t>() > 0)
    out += " " + std::to_string(sys["memory_mb"].get<int64_t>() / 1024) + " GiB,";
  const size_t gpus = sys.contains("gpus") && sys["gpus"].is_array() ? sys["gpus"].size() : 0;
  out += " " + std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s");
  if (!text("driver").empty()) out += " (driver " + text("driver") + ")";
  else if (!text("driver_reason").empty()) out += " (driver: none — " + text("driver_reason") + ")";
  return out;
}

}  // namespace

std::string system_line(sqlite3* db, int64_t session_id) {
  auto hosts = load_merged_hosts(db, session_id);
  if (hosts && !hosts->empty()) {
    std::string out = "Merged session of " + std::to_string(hosts->size()) + " hosts: ";
    for (size_t i = 0; i < hosts->size(); ++i) out += (i ? "; " : "") + describe((*hosts)[i].system);
    return out;
  }
  auto sys = load_session_system(db, session_id);
  if (!sys) return "System: unknown (" + sys.error().message + ")";
  return "System: " + describe(*sys);
}

Result<HostOfPid> HostOfPid::load(sqlite3* db, int64_t session_id) {
  HostOfPid h;
  auto spans = load_merged_hosts(db, session_id);
  if (!spans) return spans.error();
  h.spans_ = std::move(*spans);
  auto st = Statement::prepare(db, "SELECT host FROM sessions WHERE id = ?1");
  if (!st) return st.error();
  st->bind(1, session_id);
  if (st->step() == SQLITE_ROW) h.session_host_ = sanitize_untrusted(st->col_text(0), 128);
  return h;
}

const HostSpan* HostOfPid::span_of(int64_t pid) const {
  const HostSpan* best = nullptr;
  for (const HostSpan& s : spans_)
    if (pid >= s.pid_base && pid < s.pid_base + kMergedPidStride) best = &s;
  return best;
}

std::string HostOfPid::host(int64_t pid) const {
  const HostSpan* s = span_of(pid);
  return s ? s->host : session_host_;
}

int64_t HostOfPid::host_pid(int64_t pid) const {
  const HostSpan* s = span_of(pid);
  return s ? pid - s->pid_base : pid;
}

}  // namespace causeway
