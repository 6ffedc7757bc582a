// Request capture against real servers of several stacks (docs/INFERENCE.md "Which processes",
// "Kernel side"): Node's Express (libuv accepts with accept4(fd, NULL, NULL): the client's
// address is only in the kernel socket), Python's aiohttp and C++'s cpp-httplib. Each case
// checks, against the client's own record: every request stored once, each with its peer (the
// client's address as the kernel socket has it), none of causeway's own /metrics scrapes
// stored (they run every 200 ms and are counted as excluded), and the server scheduled like a
// CUDA process (sched rows for its pid) whether it was found by --pid alone or by --http-port
// alone. The burst case sends 3 × 5,000 concurrent connections: no socket record lost.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/bpf/collector_harness.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using namespace causeway::test;
using json = nlohmann::json;

namespace {

const char* kPython = "/usr/bin/python3";

std::string servers_dir() { return source_dir() + "/tests/servers"; }

void need(bool ok, const char* why) {
  if (ok) return;
  std::printf("SKIPPED: %s\n", why);
  std::exit(77);
}

// A program on PATH, as a full path (spawn() execs without a PATH search); "" when absent.
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t at = 0; at <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', at), dirs.size());
    const std::string full = dirs.substr(at, end - at) + "/" + name;
    if (::access(full.c_str(), X_OK) == 0) return full;
    at = end + 1;
  }
  return {};
}

// A port of this test's own (other tests and helpers' servers run on the same host).
int test_port(int k) { return 20000 + static_cast<int>(::getpid() % 9000) * 4 + k; }

// request_id → peer, as the client saw its own end (status 200 only: the test requires all).
struct ClientRun {
  std::map<std::string, std::string> peer_of;
  int not_ok = 0;
};
ClientRun client_results(const std::string& path) {
  ClientRun out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    const json j = json::parse(line);
    if (j["status"].get<int>() != 200) {
      ++out.not_ok;
      continue;
    }
    out.peer_of[j["request_id"].get<std::string>()] = j["peer"].get<std::string>();
  }
  return out;
}

// request_id → peer of the stored requests of one server on `path`.
std::map<std::string, std::string> stored(const std::string& db, pid_t server, const std::string& path) {
  std::map<std::string, std::string> out;
  auto h = open_read_only(db);
  REQUIRE(h);
  auto st = Statement::prepare(h->get(), "SELECT request_id, peer FROM requests WHERE server_pid = " + std::to_string(server) +
                                             " AND path = '" + path + "'");
  REQUIRE(st);
  while (st->step() == SQLITE_ROW) out[st->col_text(0)] = st->col_text(1);
  return out;
}

int64_t stat_of(const std::string& db, const std::string& name) {
  return q_int(db, "SELECT coalesce(max(value), 0) FROM collector_stats WHERE name = '" + name + "'");
}

// A server the test started, stopped when the test case ends (however it ends).
struct Server {
  pid_t pid;
  Server(const std::vector<std::string>& argv, const TempDir& dir) : pid(spawn(argv, dir.file("server.log"))) {
    wait_for_file(dir.file("server.ready"), 30000);
  }
  ~Server() {
    ::kill(pid, SIGTERM);
    wait_exit(pid);
  }
};

void run_client(const TempDir& dir, int port, int connections, int rounds) {
  auto c = run_process({kPython, servers_dir() + "/burst_client.py", "--port", std::to_string(port), "--connections",
                        std::to_string(connections), "--rounds", std::to_string(rounds), "--out", dir.file("client.json")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
}

// The checks every case makes once the trace has stopped.
void check_trace(const std::string& db, const std::string& log, pid_t server, const ClientRun& sent, size_t expected) {
  CAPTURE(log);
  CHECK(sent.not_ok == 0);
  REQUIRE(sent.peer_of.size() == expected);
  CHECK(stat_of(db, "dropped_ring_sock") == 0);
  CHECK(stat_of(db, "dropped_sock_queue") == 0);
  CHECK(stat_of(db, "dropped_sock_map") == 0);
  const auto got = stored(db, server, "/hello");
  CHECK(got.size() == expected);
  size_t same = 0, missing = 0, wrong_peer = 0;
  for (const auto& [id, peer] : sent.peer_of) {
    auto it = got.find(id);
    if (it == got.end()) ++missing;
    else if (it->second != peer) {
      if (++wrong_peer <= 3) MESSAGE("request " << id << ": stored peer '" << it->second << "', the client's " << peer);
    } else {
      ++same;
    }
  }
  CHECK(missing == 0);
  CHECK(wrong_peer == 0);
  CHECK(same == expected);
  // The scraper ran (its samples are stored) and none of its requests is a user's.
  CHECK(stat_of(db, "engine_scrapes") >= 1);
  CHECK(stored(db, server, "/metrics").empty());
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE server_pid = " + std::to_string(server) + " AND path != '/hello'") == 0);
  CHECK(stat_of(db, "http_own_scrapes_excluded") >= 1);
  CHECK(stat_of(db, "http_own_scrapes_excluded") <= stat_of(db, "engine_scrape_connections"));
  MESSAGE("stored " << got.size() << " requests; socket records " << stat_of(db, "sock_records_received")
                    << ", lost in the ring " << stat_of(db, "dropped_ring_sock") << ", in the queue "
                    << stat_of(db, "dropped_sock_queue") << "; scrapes " << stat_of(db, "engine_scrape_connections")
                    << ", excluded " << stat_of(db, "http_own_scrapes_excluded"));
  // Scheduled like a CUDA process: its context switches are recorded, and it has its row.
  CHECK(q_int(db, "SELECT count(*) FROM sched WHERE prev_pid = " + std::to_string(server) + " OR next_pid = " +
                      std::to_string(server)) > 0);
  CHECK(q_int(db, "SELECT count(*) FROM processes WHERE pid = " + std::to_string(server) + " AND comm != '' AND cmdline != ''") == 1);
}

}  // namespace

TEST_CASE("Node Express (accept4 with a NULL sockaddr), found by --pid alone: every request once, its peer from the kernel socket, no scrape") {
  const std::string node = on_path("node");
  need(!node.empty(), "node is not installed (scripts/install-deps.sh --tests)");
  need(::access((servers_dir() + "/node_modules/express").c_str(), F_OK) == 0,
       "express is not installed (cd tests/servers && npm ci)");
  TempDir dir;
  const int port = test_port(0);
  Server srv({node, servers_dir() + "/express_server.js", std::to_string(port), dir.file("server.ready")}, dir);
  Tracer t(dir, {"--pid", std::to_string(srv.pid), "--no-stack", "--engine-metrics-interval", "200ms"});
  sleep_ms(600);  // scrapes before the requests too
  run_client(dir, port, 300, 1);
  sleep_ms(800);
  REQUIRE(t.stop(SIGINT) == 0);
  check_trace(t.db(), t.log(), srv.pid, client_results(dir.file("client.json")), 300);
  // Its child, started before the trace and making no CUDA call, has its row too.
  CHECK(q_int(t.db(), "SELECT count(*) FROM processes WHERE ppid = " + std::to_string(srv.pid) +
                          " AND comm = 'sleep' AND cmdline LIKE 'sleep%600%'") == 1);
}

TEST_CASE("cpp-httplib, found by --http-port alone: scheduled, peers right; connections accepted before the trace are taken at their first read") {
  TempDir dir;
  const int port = test_port(1);
  Server srv({testprog("cw_httplib_server"), std::to_string(port), dir.file("server.ready")}, dir);
  // Four keep-alive connections opened (and accepted by the server) before the trace starts;
  // each sends one request once told to, then the client's usual burst follows.
  pid_t early = spawn({kPython, "-c",
                       "import socket, sys, os, time, json\n"
                       "port, go, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]\n"
                       "conns = [socket.create_connection(('127.0.0.1', port)) for _ in range(4)]\n"
                       "open(go + '.open', 'w').close()\n"
                       "while not os.path.exists(go): time.sleep(0.05)\n"
                       "with open(out, 'w') as f:\n"
                       "  for i, c in enumerate(conns):\n"
                       "    c.sendall(b'GET /hello HTTP/1.1\\r\\nHost: x\\r\\nx-request-id: early-%d\\r\\n\\r\\n' % i)\n"
                       "    raw = c.recv(4096)\n"
                       "    host, cport = c.getsockname()[:2]\n"
                       "    f.write(json.dumps({'request_id': 'early-%d' % i, 'peer': '%s:%d' % (host, cport), 'status': int(raw.split()[1])}) + '\\n')\n"
                       "  for c in conns: c.close()\n",
                       std::to_string(port), dir.file("go"), dir.file("early.json")},
                      dir.file("early.log"));
  Child reap_early(early);
  wait_for_file(dir.file("go.open"), 20000);
  sleep_ms(200);
  Tracer t(dir, {"--http-port", std::to_string(port), "--no-stack", "--engine-metrics-interval", "200ms"});
  touch(dir.file("go"));
  REQUIRE_MESSAGE(reap_early.wait() == 0, read_file(dir.file("early.log")));
  // Debian's cpp-httplib listens with a backlog of 5: bursts of 50, not of hundreds (whose
  // dropped SYNs would wait out TCP's retry timer).
  run_client(dir, port, 50, 4);
  sleep_ms(800);
  REQUIRE(t.stop(SIGINT) == 0);
  ClientRun sent = client_results(dir.file("client.json"));
  const ClientRun early_sent = client_results(dir.file("early.json"));
  REQUIRE(early_sent.peer_of.size() == 4);
  sent.peer_of.insert(early_sent.peer_of.begin(), early_sent.peer_of.end());
  check_trace(t.db(), t.log(), srv.pid, sent, 204);
}

TEST_CASE("aiohttp, 3 x 5,000 concurrent connections, found by --http-port alone: every request stored with its peer, no scrape, no record lost") {
  need(run_process({kPython, "-c", "import aiohttp"}).exit_code == 0,
       "python3-aiohttp is not installed (scripts/install-deps.sh --tests)");
  TempDir dir;
  const int port = test_port(2);
  Server srv({kPython, servers_dir() + "/aiohttp_server.py", std::to_string(port), dir.file("server.ready")}, dir);
  Tracer t(dir, {"--http-port", std::to_string(port), "--no-stack", "--engine-metrics-interval", "200ms"});
  run_client(dir, port, 5000, 3);
  sleep_ms(1000);
  REQUIRE(t.stop(SIGINT) == 0);
  check_trace(t.db(), t.log(), srv.pid, client_results(dir.file("client.json")), 15000);
}

TEST_CASE("Go net/http (static, no libc: the syscall tracepoints), found by --pid alone: every request once with its peer, no scrape") {
  need(!on_path("go").empty(), "go is not installed (Debian golang-go: scripts/install-deps.sh --tests)");
  TempDir dir;
  // Built here, static (CGO_ENABLED=0): its runtime makes the socket syscalls itself. Go's
  // own build cache (~/.cache/go-build) keeps later runs quick.
  auto built = run_process({"sh", "-c", "cd \"$0\" && CGO_ENABLED=0 go build -o \"$1/go_server\" .",
                            servers_dir() + "/go_server", dir.path()});
  REQUIRE_MESSAGE(built.exit_code == 0, built.err);
  const int port = test_port(3);
  Server srv({dir.file("go_server"), std::to_string(port), dir.file("server.ready")}, dir);
  Tracer t(dir, {"--pid", std::to_string(srv.pid), "--no-stack", "--engine-metrics-interval", "200ms"});
  sleep_ms(600);
  run_client(dir, port, 300, 1);
  sleep_ms(800);
  REQUIRE(t.stop(SIGINT) == 0);
  check_trace(t.db(), t.log(), srv.pid, client_results(dir.file("client.json")), 300);
}
