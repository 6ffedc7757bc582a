#include "mcp/check_probe.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "tracedb/schema.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::mcp {
namespace {

using json = nlohmann::json;

json check_item(const std::string& name, bool ok, const std::string& detail) {
  return {{"name", name}, {"ok", ok}, {"detail", detail}};
}

// The checks that need no BPF; `db_error` is the served DB's open error ("" when readable).
json checks_without_bpf(const std::string& db_error) {
  json checks = json::array();
  utsname u{};
  uname(&u);
  checks.push_back(check_item("kernel", true, std::string(u.sysname) + " " + u.release));
  bool btf = std::filesystem::exists("/sys/kernel/btf/vmlinux");
  checks.push_back(check_item("btf", btf, btf ? "/sys/kernel/btf/vmlinux present" : "no kernel BTF: CO-RE programs cannot load"));
  bool root = geteuid() == 0;
  checks.push_back(check_item("privileges", root,
                              root ? "running as root" : "not root: `causeway trace` needs root or CAP_BPF+CAP_PERFMON"));
  std::ifstream nv("/proc/driver/nvidia/version");
  std::string nvline;
  std::getline(nv, nvline);
  checks.push_back(check_item("nvidia_driver", !nvline.empty(), nvline.empty() ? "no NVIDIA kernel driver loaded" : nvline));
  checks.push_back(check_item("trace_db", db_error.empty(), db_error.empty() ? "readable" : db_error));
  return checks;
}

// The check document's items ({name, status: PASS|WARN|FAIL|SKIP, detail, remedy}) as
// get_check's ({name, ok, detail, status, remedy}).
json checks_from_report(const json& doc) {
  json checks = json::array();
  if (!doc.contains("checks") || !doc["checks"].is_array()) return checks;
  for (const auto& one : doc["checks"]) {
    if (!one.is_object()) continue;
    auto text = [&](const char* key) { return one.contains(key) && one[key].is_string() ? one[key].get<std::string>() : ""; };
    std::string status = text("status");
    bool ok = one.contains("ok") && one["ok"].is_boolean() ? one["ok"].get<bool>() : status != "FAIL";
    json item = check_item(text("name"), ok, text("detail"));
    if (!status.empty()) item["status"] = status;
    if (!text("remedy").empty()) item["remedy"] = text("remedy");
    checks.push_back(std::move(item));
  }
  return checks;
}

}  // namespace

json served_db(DbPool& pool) {
  json d = {{"path", pool.path()}, {"latest_schema_version", latest_schema_version()}};
  auto db = pool.acquire();
  if (!db) {
    d["readable"] = false;
    d["error"] = db.error().message;
    return d;
  }
  d["readable"] = true;
  auto version = query_int(db->get(), "PRAGMA user_version");
  d["schema_version"] = version && version.value() ? json(*version.value()) : json(nullptr);
  auto sessions = query_int(db->get(), "SELECT COUNT(*) FROM sessions");
  d["sessions"] = sessions && sessions.value() ? json(*sessions.value()) : json(0);
  auto latest = query_int(db->get(), "SELECT MAX(id) FROM sessions");
  d["latest_session_id"] = latest && latest.value() ? json(*latest.value()) : json(nullptr);
  return d;
}

json probe_readiness(const HostCheck& host_check, DbPool& pool) {
  json db = served_db(pool);
  if (host_check) {
    // One check at a time: each loads and attaches BPF programs in this process.
    static std::mutex one_check_at_a_time;
    json doc;
    {
      std::lock_guard lock(one_check_at_a_time);
      doc = host_check(pool.path());  // the served DB, not the default one `check` would look at
    }
    if (doc.is_object() && !doc.contains("error")) {
      bool ready = doc.contains("ready") && doc["ready"].is_boolean() ? doc["ready"].get<bool>() : false;
      json checks = checks_from_report(doc);
      return {{"ready", ready}, {"source", "causeway check"}, {"checks", checks}, {"report", doc}, {"db", db}};
    }
  }
  json checks = checks_without_bpf(db["readable"].get<bool>() ? "" : db.value("error", std::string()));
  bool ready = true;
  for (const auto& c : checks)
    if (c["name"] != "kernel" && c["name"] != "trace_db") ready = ready && c["ok"].get<bool>();
  return {{"ready", ready}, {"source", "mcp"}, {"checks", checks}, {"db", db}};
}

}  // namespace causeway::mcp
