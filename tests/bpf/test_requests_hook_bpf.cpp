// Which hook request tracing runs on (collector/sock_hook.h, docs/INFERENCE.md "Which syscall
// hook"): the syscall tracepoints of the socket syscalls when tracefs lists them, else the raw
// sys_enter/sys_exit; CAUSEWAY_SOCK_HOOK=raw forces the fallback, whose requests must be as
// exact as the default's. What the tracer attached is read from the kernel's side: the
// fdinfo of its BPF links (a raw tracepoint link names its tracepoint).
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/bpf/collector_harness.h"

using namespace causeway;
using namespace causeway::test;
using json = nlohmann::json;

namespace {

const char* kPython = "/usr/bin/python3";

void need_aiohttp() {
  if (run_process({kPython, "-c", "import aiohttp"}).exit_code != 0) {
    std::printf("SKIPPED: python3-aiohttp is not installed (scripts/install-deps.sh --tests)\n");
    std::exit(77);
  }
}

// Whether this kernel has the syscall tracepoints where libbpf looks (checked here, not with
// the collector's own function).
bool kernel_lists_syscall_tracepoints() {
  for (const char* root : {"/sys/kernel/debug/tracing", "/sys/kernel/tracing"})
    if (::access(root, F_OK) == 0) return ::access((std::string(root) + "/events/syscalls/sys_enter_read/id").c_str(), R_OK) == 0;
  return false;
}

// The raw tracepoints a process holds BPF links on (tp_name of its raw_tracepoint links).
std::multiset<std::string> raw_tracepoint_links(pid_t pid) {
  std::multiset<std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
  DIR* d = ::opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name);
    std::string line;
    bool raw = false;
    while (std::getline(f, line)) {
      if (line.rfind("link_type:", 0) == 0) raw = line.find("raw_tracepoint") != std::string::npos;
      if (raw && line.rfind("tp_name:", 0) == 0) out.insert(line.substr(line.find_first_not_of(" \t", 8)));
    }
  }
  ::closedir(d);
  return out;
}

std::set<std::string> client_ids(const std::string& path) {
  std::set<std::string> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) out.insert(json::parse(line)["request_id"].get<std::string>());
  return out;
}

struct Run {
  std::string db, log;
  std::multiset<std::string> raw_links;
  std::set<std::string> sent;
};

// A streaming server traced with --http-port while a client sends 40 requests; `hook` is
// CAUSEWAY_SOCK_HOOK for the tracer ("" for none).
Run traced_run(TempDir& dir, const std::string& hook) {
  const int port = 30000 + static_cast<int>(::getpid() % 20000) + (hook.empty() ? 0 : 1);
  pid_t server = spawn({kPython, source_dir() + "/tests/testprogs/inference_server.py", "--port", std::to_string(port),
                        "--cudart", testprog("libcudart.so.13"), "--step-ms", "10", "--ready-file",
                        dir.file("server.ready")},
                       dir.file("server.log"));
  Child reap(server);
  wait_for_file(dir.file("server.ready"), 30000);
  if (hook.empty()) ::unsetenv("CAUSEWAY_SOCK_HOOK");
  else ::setenv("CAUSEWAY_SOCK_HOOK", hook.c_str(), 1);
  Tracer t(dir, {"--http-port", std::to_string(port), "--no-stack", "--engine-metrics-interval", "0"});
  ::unsetenv("CAUSEWAY_SOCK_HOOK");
  Run r;
  r.raw_links = raw_tracepoint_links(t.pid());
  auto c = run_process({kPython, source_dir() + "/tests/testprogs/inference_client.py", "--port", std::to_string(port),
                        "--requests", "40", "--concurrency", "4", "--max-tokens", "5", "--out", dir.file("client.json")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  ::kill(server, SIGTERM);
  reap.wait();
  r.db = t.db();
  r.log = t.log();
  r.sent = client_ids(dir.file("client.json"));
  return r;
}

// Every request the client sent, once, complete, with its five events: no more, no fewer.
void check_exact(const Run& r) {
  CAPTURE(r.log);
  REQUIRE(r.sent.size() == 40);
  CHECK(q_int(r.db, "SELECT count(*) FROM requests WHERE path = '/v1/completions'") == 40);
  std::set<std::string> traced;
  for (const std::string& id : [&] {
         std::vector<std::string> ids;
         std::stringstream ss(q_text(r.db, "SELECT group_concat(request_id, ' ') FROM requests"));
         for (std::string s; ss >> s;) ids.push_back(s);
         return ids;
       }())
    traced.insert(id);
  CHECK(traced == r.sent);
  CHECK(q_int(r.db, "SELECT count(*) FROM requests WHERE status != 200 OR complete != 1 OR events != 5") == 0);
}

json check_item(const TempDir& dir, const std::vector<std::string>& env, const std::string& name) {
  auto r = run_causeway({"check", "--json", "--db", dir.file("check.db")}, env);
  const json doc = json::parse(r.out);
  for (const auto& item : doc["checks"])
    if (item["name"] == name) return item;
  FAIL("causeway check has no " << name << " item: " << r.out);
  return {};
}

}  // namespace

TEST_CASE("the syscall tracepoints of the socket syscalls when the kernel has them, else the raw fallback") {
  need_aiohttp();
  TempDir dir;
  const bool syscalls = kernel_lists_syscall_tracepoints();
  MESSAGE("this kernel " << std::string(syscalls ? "lists" : "does not list") << " syscalls:sys_enter_read");
  Run r = traced_run(dir, "");
  check_exact(r);
  if (syscalls) {
    // No raw tracepoint on sys_enter/sys_exit: untraced processes' syscalls never run a program.
    CHECK(r.raw_links.count("sys_enter") == 0);
    CHECK(r.raw_links.count("sys_exit") == 0);
    // 11 entries (accept, accept4, read, write, readv, writev, recvfrom, sendto, recvmsg,
    // sendmsg, close) and the exits of all but close.
    CHECK(q_int(r.db, "SELECT value FROM collector_stats WHERE name = 'http_syscall_tracepoint_links'") == 21);
    CHECK(q_int(r.db, "SELECT value FROM collector_stats WHERE name = 'http_raw_syscall_links'") == 0);
    CHECK(r.log.find("raw tracepoints sys_enter/sys_exit") == std::string::npos);
  } else {
    CHECK(r.raw_links.count("sys_enter") == 1);
    CHECK(q_int(r.db, "SELECT value FROM collector_stats WHERE name = 'http_raw_syscall_links'") == 2);
    CHECK(r.log.find("no syscalls:sys_enter_read tracepoint") != std::string::npos);
  }
  // `check` says the same.
  json item = check_item(dir, {}, "http_syscalls");
  CAPTURE(item.dump());
  CHECK(item["status"] == (syscalls ? "PASS" : "WARN"));
  CHECK(item["detail"].get<std::string>().find(syscalls ? "syscall tracepoints" : "raw tracepoints") != std::string::npos);
}

TEST_CASE("CAUSEWAY_SOCK_HOOK=raw: the raw sys_enter/sys_exit fallback, and its requests as exact") {
  need_aiohttp();
  TempDir dir;
  Run r = traced_run(dir, "raw");
  check_exact(r);
  CHECK(r.raw_links.count("sys_enter") == 1);
  CHECK(r.raw_links.count("sys_exit") == 1);
  CHECK(q_int(r.db, "SELECT value FROM collector_stats WHERE name = 'http_raw_syscall_links'") == 2);
  CHECK(q_int(r.db, "SELECT value FROM collector_stats WHERE name = 'http_syscall_tracepoint_links'") == 0);
  // The user is told what it costs and why.
  CHECK(r.log.find("warning: HTTP requests traced through the raw tracepoints sys_enter/sys_exit") != std::string::npos);
  CHECK(r.log.find("CAUSEWAY_SOCK_HOOK=raw") != std::string::npos);
  json item = check_item(dir, {"CAUSEWAY_SOCK_HOOK=raw"}, "http_syscalls");
  CAPTURE(item.dump());
  CHECK(item["status"] == "WARN");
  CHECK(item["detail"].get<std::string>().find("CAUSEWAY_SOCK_HOOK=raw") != std::string::npos);
}

TEST_CASE("CAUSEWAY_SOCK_HOOK with an unknown value: a clear error, the rest of check unaffected") {
  TempDir dir;
  json item = check_item(dir, {"CAUSEWAY_SOCK_HOOK=fentry"}, "http_syscalls");
  CAPTURE(item.dump());
  CHECK(item["status"] == "WARN");
  CHECK(item["detail"].get<std::string>().find("CAUSEWAY_SOCK_HOOK=fentry: expected raw or syscalls") != std::string::npos);
}
