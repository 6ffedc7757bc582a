#include "mcp/check_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "tracedb/open.h"
#include "tracedb/schema.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::mcp {
namespace {

using json = nlohmann::json;

struct ChildOutput {
  int exit_code = -1;
  std::string out;
};

// Runs argv with stdout captured, stdin/stderr to /dev/null, killed after timeout_ms.
ChildOutput run_child(const std::vector<std::string>& argv, int timeout_ms) {
  ChildOutput r;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return r;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(devnull, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    if (r.out.size() < (1 << 20)) r.out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

json check(const std::string& name, bool ok, const std::string& detail) {
  return {{"name", name}, {"ok", ok}, {"detail", detail}};
}

json local_checks(const std::string& db_path) {
  json checks = json::array();
  utsname u{};
  uname(&u);
  checks.push_back(check("kernel", true, std::string(u.sysname) + " " + u.release));
  bool btf = std::filesystem::exists("/sys/kernel/btf/vmlinux");
  checks.push_back(check("btf", btf, btf ? "/sys/kernel/btf/vmlinux present" : "no kernel BTF: CO-RE programs cannot load"));
  bool root = geteuid() == 0;
  checks.push_back(check("privileges", root,
                         root ? "running as root" : "not root: `causeway trace` needs root or CAP_BPF+CAP_PERFMON"));
  std::ifstream nv("/proc/driver/nvidia/version");
  std::string nvline;
  std::getline(nv, nvline);
  checks.push_back(check("nvidia_driver", !nvline.empty(), nvline.empty() ? "no NVIDIA kernel driver loaded" : nvline));
  auto db = open_read_only(db_path);
  checks.push_back(check("trace_db", db.ok(), db.ok() ? "readable" : db.error().message));
  return checks;
}

}  // namespace

json served_db(const std::string& db_path) {
  json d = {{"path", db_path}, {"latest_schema_version", latest_schema_version()}};
  auto db = open_read_only(db_path);
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

json probe_readiness(const std::string& self_exe, const std::string& db_path) {
  if (!self_exe.empty()) {
    // The served DB, not the default one `check` would look at.
    ChildOutput c = run_child({self_exe, "check", "--json", "--db", db_path}, 10000);
    json doc = json::parse(c.out, nullptr, false);
    if ((c.exit_code == 0 || c.exit_code == 1) && doc.is_object() && !doc.contains("error")) {
      json checks = json::array();
      // `check --json` items: {name, status: PASS|WARN|FAIL|SKIP, detail, remedy}.
      if (doc.contains("checks") && doc["checks"].is_array())
        for (const auto& one : doc["checks"]) {
          if (!one.is_object()) continue;
          auto text = [&](const char* key) { return one.contains(key) && one[key].is_string() ? one[key].get<std::string>() : ""; };
          std::string status = text("status");
          bool ok = one.contains("ok") && one["ok"].is_boolean() ? one["ok"].get<bool>() : status != "FAIL";
          json item = check(text("name"), ok, text("detail"));
          if (!status.empty()) item["status"] = status;
          if (!text("remedy").empty()) item["remedy"] = text("remedy");
          checks.push_back(std::move(item));
        }
      bool ready = doc.contains("ready") && doc["ready"].is_boolean() ? doc["ready"].get<bool>() : c.exit_code == 0;
      return {{"ready", ready}, {"source", "causeway check"}, {"checks", checks}, {"report", doc}, {"db", served_db(db_path)}};
    }
  }
  json checks = local_checks(db_path);
  bool ready = true;
  for (const auto& c : checks)
    if (c["name"] != "kernel" && c["name"] != "trace_db") ready = ready && c["ok"].get<bool>();
  return {{"ready", ready}, {"source", "mcp"}, {"checks", checks}, {"db", served_db(db_path)}};
}

}  // namespace causeway::mcp
