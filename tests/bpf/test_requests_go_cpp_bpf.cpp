// Request capture on a Go and a C++ server (docs/INFERENCE.md "Tested stacks"): Go's net/http
// built static (CGO_ENABLED=0: no libc, its runtime makes the socket syscalls, served from the
// syscall tracepoints) and cpp-httplib (Debian's libcpp-httplib-dev, what llama.cpp's server
// uses: a thread pool, blocking accept and reads). Go is found by --pid alone, cpp-httplib by
// --http-port alone; checks against the clients' own records: every
// request once with its peer, no scrape stored, the server scheduled, the `openai` SDK's
// streamed chat completions on Go, and connections accepted before the trace.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include "tests/bpf/requests_stacks_support.h"

using namespace causeway;
using namespace causeway::test;
using namespace causeway::test::stacks;

namespace {

// tests/servers/go_server built here, static. Go's own build cache (~/.cache/go-build) keeps
// later runs quick.
std::string build_go_server(const TempDir& dir) {
  need(!on_path("go").empty(), "go is not installed (Debian golang-go: scripts/install-deps.sh --tests)");
  auto built = run_process({"sh", "-c", "cd \"$0\" && CGO_ENABLED=0 go build -o \"$1/go_server\" .",
                            servers_dir() + "/go_server", dir.path()});
  REQUIRE_MESSAGE(built.exit_code == 0, built.err);
  return dir.file("go_server");
}

}  // namespace

TEST_CASE("Go net/http (static, no libc: the syscall tracepoints), found by --pid alone: bursts and the openai SDK's streams, each once with its peer, no scrape") {
  // The SDK first: a skip (exit 77) runs no destructor, so nothing may be started before it.
  (void)node_with("openai");
  TempDir dir;
  const std::string server = build_go_server(dir);
  const int port = test_port(0);
  Server srv({server, std::to_string(port), dir.file("server.ready")}, dir);
  bursts_and_sdk_case(dir, srv.pid, port, {"--pid", std::to_string(srv.pid)});
}

TEST_CASE("cpp-httplib, found by --http-port alone: scheduled, peers right; connections accepted before the trace are taken at their first read") {
  TempDir dir;
  const int port = test_port(2);
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

TEST_CASE("Go net/http (static), found by --http-port alone: every request once with its peer, scheduled, no scrape") {
  TempDir dir;
  const std::string server = build_go_server(dir);
  const int port = test_port(1);
  Server srv({server, std::to_string(port), dir.file("server.ready")}, dir);
  bursts_case(dir, srv.pid, port, {"--http-port", std::to_string(port)}, 300, 1);
}

TEST_CASE("cpp-httplib, found by --pid alone: every request once with its peer, its pool's threads scheduled, no scrape") {
  TempDir dir;
  const int port = test_port(3);
  Server srv({testprog("cw_httplib_server"), std::to_string(port), dir.file("server.ready")}, dir);
  bursts_case(dir, srv.pid, port, {"--pid", std::to_string(srv.pid)}, 50, 4);
}

TEST_CASE("Go net/http (static), a CPU hog pinned on its CPU, found by --pid alone: the hog named, never causeway") {
  TempDir dir;
  const std::string server = build_go_server(dir);
  const int port = test_port(1);
  Server srv({server, std::to_string(port), dir.file("server.ready")}, dir);
  hog_case(dir, srv.pid, port, {"--pid", std::to_string(srv.pid)});
}

TEST_CASE("cpp-httplib, a CPU hog pinned on its CPU, found by --http-port alone: the hog named, never causeway") {
  TempDir dir;
  const int port = test_port(3);
  Server srv({testprog("cw_httplib_server"), std::to_string(port), dir.file("server.ready")}, dir);
  hog_case(dir, srv.pid, port, {"--http-port", std::to_string(port)});
}
