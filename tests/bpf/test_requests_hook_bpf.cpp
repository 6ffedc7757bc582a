// Which hook request tracing runs on (collector/sock_hook.h, docs/INFERENCE.md "Which hook"):
// by default the libc hook where a uprobe trap costs at most 1 us, else the syscall
// tracepoints of the socket syscalls; with CAUSEWAY_SOCK_HOOK=libc
// uprobes on the server's own libc socket functions, attached with its pid, and no tracepoint
// at all, while a server without a libc (a static binary) gets the syscall tracepoints when
// tracefs lists them, else the raw sys_enter/sys_exit; CAUSEWAY_SOCK_HOOK=raw forces the raw
// ones. Every hook's requests must be as exact. What the tracer attached is read from the kernel's side: the fdinfo of its BPF
// links (a raw tracepoint link names its tracepoint) and the probed processes' memory (a
// uprobe is a breakpoint instruction written into the text of the processes it applies to).
#include <doctest/doctest.h>

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
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

// The libc socket functions both probed processes call: those whose text a uprobe patches.
const char* const kLibcFns[] = {"read", "write", "recv", "send", "accept4", "close"};

// Where `name` is in this process's libc: the file (path, inode) and the offset in it.
struct FileSpot {
  std::string path;
  uint64_t inode = 0;
  uint64_t offset = 0;
};
FileSpot libc_spot(const char* name) {
  void* addr = ::dlsym(RTLD_DEFAULT, name);
  REQUIRE(addr != nullptr);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto a = reinterpret_cast<uint64_t>(addr);
  while (std::getline(maps, line)) {
    uint64_t lo = 0, hi = 0, off = 0, inode = 0;
    char path[512] = {0};
    if (std::sscanf(line.c_str(), "%lx-%lx %*s %lx %*s %lu %511s", &lo, &hi, &off, &inode, path) == 5 && a >= lo && a < hi)
      return {path, inode, a - lo + off};
  }
  FAIL("no mapping holds " << name);
  return {};
}

// The first 4 bytes at a file offset in process pid's mapping of that file (nullopt when it
// does not map it), read through /proc/PID/mem.
std::optional<std::string> text_in(pid_t pid, const FileSpot& spot) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t lo = 0, hi = 0, off = 0, inode = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %*s %lx %*s %lu", &lo, &hi, &off, &inode) != 4 || inode != spot.inode) continue;
    if (spot.offset < off || spot.offset >= off + (hi - lo)) continue;
    const int fd = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    char b[4];
    const ssize_t n = ::pread(fd, b, sizeof b, static_cast<off_t>(lo + spot.offset - off));
    ::close(fd);
    REQUIRE(n == 4);
    return std::string(b, 4);
  }
  return std::nullopt;
}

std::string text_in_file(const FileSpot& spot) {
  const int fd = ::open(spot.path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  char b[4];
  const ssize_t n = ::pread(fd, b, sizeof b, static_cast<off_t>(spot.offset));
  ::close(fd);
  REQUIRE(n == 4);
  return std::string(b, 4);
}

// For each function of kLibcFns: whether its first bytes in pid's memory differ from the file
// (a breakpoint is there). Every function must be mapped.
std::map<std::string, bool> patched(pid_t pid) {
  std::map<std::string, bool> out;
  for (const char* fn : kLibcFns) {
    const FileSpot spot = libc_spot(fn);
    auto mem = text_in(pid, spot);
    REQUIRE_MESSAGE(mem.has_value(), "pid " << pid << " does not map " << spot.path);
    out[fn] = *mem != text_in_file(spot);
  }
  return out;
}

struct Run {
  std::string db, log;
  std::multiset<std::string> raw_links;
  std::set<std::string> sent;
  pid_t server = -1, bystander = -1;
  // kLibcFns patched in the server's memory and in an untraced process's, while traced.
  std::map<std::string, bool> server_patched, bystander_patched;
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
  // --pid: not the servers of other jobs' CUDA processes on a shared host.
  Tracer t(dir, {"--http-port", std::to_string(port), "--pid", std::to_string(server), "--no-stack",
                 "--engine-metrics-interval", "0"});
  ::unsetenv("CAUSEWAY_SOCK_HOOK");
  Run r;
  r.server = server;
  r.raw_links = raw_tracepoint_links(t.pid());
  // An untraced process calling the same libc functions on sockets (a socketpair and a
  // loopback connection of its own) the whole time the server is traced.
  pid_t bystander = spawn({kPython, "-c",
                           "import os, socket, time\n"
                           "a, b = socket.socketpair()\n"
                           "l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen()\n"
                           "c = socket.create_connection(l.getsockname()); s, _ = l.accept()\n"
                           "end = time.time() + 120\n"
                           "while time.time() < end:\n"
                           "    a.send(b'x'); b.recv(1); os.write(c.fileno(), b'y'); os.read(s.fileno(), 1)\n"
                           "    time.sleep(0.001)\n"},
                          dir.file("bystander.log"));
  Child reap_bystander(bystander);
  r.bystander = bystander;
  auto c = run_process({kPython, source_dir() + "/tests/testprogs/inference_client.py", "--port", std::to_string(port),
                        "--requests", "40", "--concurrency", "4", "--max-tokens", "5", "--out", dir.file("client.json")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  r.server_patched = patched(server);
  r.bystander_patched = patched(bystander);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  ::kill(server, SIGTERM);
  reap.wait();
  r.db = t.db();
  r.log = t.log();
  r.sent = client_ids(dir.file("client.json"));
  return r;
}

// Every request the client sent to the streaming server, once, complete, with its five events:
// no more, no fewer.
void check_exact(const Run& r) {
  CAPTURE(r.log);
  REQUIRE(r.sent.size() == 40);
  CHECK(q_int(r.db, "SELECT count(*) FROM requests WHERE path = '/v1/completions'") == 40);
  std::set<std::string> traced;
  for (const std::string& id : [&] {
         std::vector<std::string> ids;
         std::stringstream ss(q_text(r.db, "SELECT group_concat(request_id, ' ') FROM requests WHERE path = '/v1/completions'"));
         for (std::string s; ss >> s;) ids.push_back(s);
         return ids;
       }())
    traced.insert(id);
  CHECK(traced == r.sent);
  CHECK(q_int(r.db, "SELECT count(*) FROM requests WHERE path = '/v1/completions' AND (status != 200 OR complete != 1 OR events != 5)") == 0);
}

json check_item(const TempDir& dir, const std::vector<std::string>& env, const std::string& name) {
  auto r = run_causeway({"check", "--json", "--db", dir.file("check.db")}, env);
  const json doc = json::parse(r.out);
  for (const auto& item : doc["checks"])
    if (item["name"] == name) return item;
  FAIL("causeway check has no " << name << " item: " << r.out);
  return {};
}

int64_t collector_stat(const Run& r, const std::string& name) {
  return q_int(r.db, "SELECT value FROM collector_stats WHERE name = '" + name + "'");
}

// No function probed in `fns` (every kLibcFns entry false).
bool none_patched(const std::map<std::string, bool>& fns) {
  for (const auto& [fn, p] : fns)
    if (p) return false;
  return true;
}

}  // namespace

TEST_CASE("CAUSEWAY_SOCK_HOOK=libc: the libc hook on the server alone; no tracepoint attached; an untraced process never traps") {
  need_aiohttp();
  TempDir dir;
  Run r = traced_run(dir, "libc");
  check_exact(r);
  // No syscall hook of any kind: untraced processes' syscalls run no program.
  CHECK(r.raw_links.count("sys_enter") == 0);
  CHECK(r.raw_links.count("sys_exit") == 0);
  CHECK(collector_stat(r, "http_syscall_tracepoint_links") == 0);
  CHECK(collector_stat(r, "http_raw_syscall_links") == 0);
  CHECK(collector_stat(r, "http_libc_servers") == 1);
  CHECK(collector_stat(r, "http_libc_links") >= 1);  // the server still ran at stop
  // The per-process property, from the kernel's side: each probed function carries a
  // breakpoint in the server's text and none in the untraced process's, though both map the
  // same libc file and call the same functions on sockets the whole time.
  CAPTURE(r.log);
  for (const auto& [fn, p] : r.server_patched) {
    CAPTURE(fn);
    CHECK(p);
  }
  CHECK(none_patched(r.bystander_patched));
  // ... and no record of its own.
  CHECK(q_int(r.db, "SELECT count(*) FROM requests WHERE server_pid != " + std::to_string(r.server)) == 0);
  // `check` says the same.
  json item = check_item(dir, {"CAUSEWAY_SOCK_HOOK=libc"}, "http_syscalls");
  CAPTURE(item.dump());
  CHECK(item["detail"].get<std::string>().find("libc uprobes") != std::string::npos);
  CHECK(item["status"] == (kernel_lists_syscall_tracepoints() ? "PASS" : "WARN"));
}

TEST_CASE("default: the hook a trap's measured cost picks (libc at most 1 us, else the syscall tracepoints), requests as exact") {
  need_aiohttp();
  if (!kernel_lists_syscall_tracepoints()) {
    std::printf("SKIPPED: this kernel does not list syscalls:sys_enter_read (tracefs)\n");
    std::exit(77);
  }
  TempDir dir;
  Run r = traced_run(dir, "");
  check_exact(r);
  CAPTURE(r.log);
  CHECK(r.raw_links.count("sys_enter") == 0);
  // The trap was timed (what it cost is kept; the log says it too, without --quiet).
  const int64_t trap_ns = collector_stat(r, "http_uprobe_trap_ns");
  MESSAGE("a uprobe trap costs " << trap_ns << " ns here");
  CHECK(trap_ns > 0);
  const bool libc = trap_ns <= 1000;
  if (libc) {
    CHECK(collector_stat(r, "http_syscall_tracepoint_links") == 0);
    CHECK(collector_stat(r, "http_libc_servers") == 1);
    for (const auto& [fn, p] : r.server_patched) {
      CAPTURE(fn);
      CHECK(p);
    }
  } else {
    // 11 entries (accept, accept4, read, write, readv, writev, recvfrom, sendto, recvmsg,
    // sendmsg, close) and the exits of all but close.
    CHECK(collector_stat(r, "http_syscall_tracepoint_links") == 21);
    CHECK(collector_stat(r, "http_libc_servers") == 0);
    CHECK(none_patched(r.server_patched));
  }
  CHECK(none_patched(r.bystander_patched));
  // `check` times the trap too and says which side of the budget it fell.
  json item = check_item(dir, {}, "http_syscalls");
  CAPTURE(item.dump());
  CHECK(item["detail"].get<std::string>().find(libc ? "within the libc hook's budget of 1 us"
                                                    : "above the libc hook's budget of 1 us") != std::string::npos);
  CHECK(item["detail"].get<std::string>().find(libc ? "libc uprobes" : "syscall tracepoints") == 0);
}

TEST_CASE("CAUSEWAY_SOCK_HOOK=raw: the raw sys_enter/sys_exit fallback, and its requests as exact") {
  need_aiohttp();
  TempDir dir;
  Run r = traced_run(dir, "raw");
  check_exact(r);
  CHECK(r.raw_links.count("sys_enter") == 1);
  CHECK(r.raw_links.count("sys_exit") == 1);
  CHECK(collector_stat(r, "http_raw_syscall_links") == 2);
  CHECK(collector_stat(r, "http_syscall_tracepoint_links") == 0);
  CHECK(collector_stat(r, "http_libc_servers") == 0);
  CHECK(none_patched(r.server_patched));
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
  CHECK(item["detail"].get<std::string>().find("CAUSEWAY_SOCK_HOOK=fentry: expected libc, syscalls or raw") != std::string::npos);
}

TEST_CASE("CAUSEWAY_SOCK_HOOK=libc: a static server (no libc) gets the tracepoint hook beside a libc-hooked server; each request once") {
  need_aiohttp();
  TempDir dir;
  const bool syscalls = kernel_lists_syscall_tracepoints();
  const int port = 30000 + static_cast<int>(::getpid() % 20000) + 2, static_port = port + 1;
  pid_t server = spawn({kPython, source_dir() + "/tests/testprogs/inference_server.py", "--port", std::to_string(port),
                        "--cudart", testprog("libcudart.so.13"), "--step-ms", "10", "--ready-file",
                        dir.file("server.ready")},
                       dir.file("server.log"));
  Child reap(server);
  pid_t static_server = spawn({testprog("cw_static_http"), "--port", std::to_string(static_port), "--ready-file",
                               dir.file("static.ready")},
                              dir.file("static.log"));
  Child reap_static(static_server);
  wait_for_file(dir.file("server.ready"), 30000);
  wait_for_file(dir.file("static.ready"), 30000);
  ::setenv("CAUSEWAY_SOCK_HOOK", "libc", 1);
  Tracer t(dir, {"--http-port", std::to_string(port), "--http-port", std::to_string(static_port), "--pid",
                 std::to_string(server), "--pid", std::to_string(static_server), "--no-stack",
                 "--engine-metrics-interval", "0"});
  ::unsetenv("CAUSEWAY_SOCK_HOOK");
  auto c = run_process({kPython, source_dir() + "/tests/testprogs/inference_client.py", "--port", std::to_string(port),
                        "--requests", "40", "--concurrency", "4", "--max-tokens", "5", "--out", dir.file("client.json")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  // The static server was blocked in accept() before the tracer attached: that connection is
  // not seen (docs/INFERENCE.md "Not done yet"), so a warm-up one takes it.
  auto s = run_process({kPython, "-c",
                        "import http.client, sys\n"
                        "w = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]))\n"
                        "w.request('GET', '/warm-up'); w.getresponse().read(); w.close()\n"
                        "c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]))\n"
                        "for i in range(20):\n"
                        "    c.request('POST', '/static', body=b'{}', headers={'X-Request-Id': 'static-%d' % i})\n"
                        "    r = c.getresponse()\n"
                        "    assert r.status == 200 and r.read() == b'ok'\n",
                        std::to_string(static_port)});
  REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  // The libc-hooked server exits: at the next rescan (1 s) its probes detach.
  sleep_ms(300);
  ::kill(server, SIGTERM);
  reap.wait();
  sleep_ms(2500);
  REQUIRE(t.stop(SIGINT) == 0);
  Run r;
  r.db = t.db();
  r.log = t.log();
  r.sent = client_ids(dir.file("client.json"));
  CAPTURE(r.log);
  // The aiohttp server on the libc hook: every request once, although the tracepoints run too.
  check_exact(r);
  CHECK(q_int(r.db, "SELECT count(DISTINCT server_pid) FROM requests WHERE path = '/v1/completions'") == 1);
  CHECK(q_int(r.db, "SELECT server_pid FROM requests WHERE path = '/v1/completions' LIMIT 1") == server);
  // The static one through the tracepoints: its 20 requests, each once.
  CHECK(q_int(r.db, "SELECT count(*) FROM requests WHERE path = '/static' AND status = 200 AND server_pid = " +
                        std::to_string(static_server)) == 20);
  CHECK(q_int(r.db, "SELECT count(DISTINCT request_id) FROM requests WHERE path = '/static' AND request_id LIKE 'static-%'") == 20);
  CHECK(collector_stat(r, "http_libc_servers") == 1);
  CHECK(collector_stat(r, "http_libc_links") == 0);  // detached when it exited
  CHECK(q_int(r.db, "SELECT value FROM collector_stats WHERE name = '" +
                        std::string(syscalls ? "http_syscall_tracepoint_links" : "http_raw_syscall_links") + "'") ==
        (syscalls ? 21 : 2));
}
