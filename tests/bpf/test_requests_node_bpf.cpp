// Request capture on Node servers from npm (docs/INFERENCE.md "Tested stacks"): Express 4 and
// fastify 5. libuv accepts with accept4(fd, NULL, NULL), so a client's address is only in the
// kernel socket. Each case checks, against the client's own record: every request stored
// once with its peer, none of causeway's own /metrics scrapes stored (each scrape connection
// counted as excluded), the server scheduled like a CUDA process whether found by --pid alone
// or by --http-port alone; the official `openai` SDK's streamed chat completions each with
// their content events; errors, server
// aborts and client disconnects told apart live; and TLS through Node's bundled OpenSSL
// counted and said, never parsed into invented rows.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/bpf/requests_stacks_support.h"

using namespace causeway;
using namespace causeway::test;
using namespace causeway::test::stacks;
using json = nlohmann::json;

namespace {

std::string fastify_js() { return servers_dir() + "/fastify_server.js"; }

// A self-signed certificate for 127.0.0.1 in dir (cert.pem, key.pem).
void make_cert(const TempDir& dir) {
  auto r = run_process({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", dir.file("key.pem"), "-out",
                        dir.file("cert.pem")});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
}

}  // namespace

TEST_CASE("Node Express (accept4 with a NULL sockaddr), found by --pid alone: every request once, its peer from the kernel socket, no scrape") {
  const std::string node = node_with("express");
  TempDir dir;
  const int port = test_port(0);
  Server srv({node, servers_dir() + "/express_server.js", std::to_string(port), dir.file("server.ready")}, dir);
  Tracer t(dir, {"--pid", std::to_string(srv.pid), "--no-stack", "--engine-metrics-interval", "200ms"});
  sleep_ms(600);  // found before any request: not scraped until it is seen speaking HTTP
  run_client(dir, port, 300, 1);
  sleep_ms(1500);  // scraped from its first request on: a few scrapes once the burst is served
  REQUIRE(t.stop(SIGINT) == 0);
  check_trace(t.db(), t.log(), srv.pid, client_results(dir.file("client.json")), 300);
  // Its child, started before the trace and making no CUDA call, has its row too.
  CHECK(q_int(t.db(), "SELECT count(*) FROM processes WHERE ppid = " + std::to_string(srv.pid) +
                          " AND comm = 'sleep' AND cmdline LIKE 'sleep%600%'") == 1);
}

TEST_CASE("fastify 5, found by --http-port alone: bursts and the openai SDK's streamed chat completions, each once with its peer, no scrape") {
  const std::string node = node_with("fastify");
  node_with("openai");
  TempDir dir;
  const int port = test_port(1);
  Server srv({node, fastify_js(), std::to_string(port), dir.file("server.ready")}, dir);
  bursts_and_sdk_case(dir, srv.pid, port, {"--http-port", std::to_string(port)});
}

TEST_CASE("fastify 5, a CPU hog pinned on its CPU, found by --pid alone: the hog named as the culprit of the requests it slowed, never causeway") {
  const std::string node = node_with("fastify");
  TempDir dir;
  const int port = test_port(2);
  Server srv({node, fastify_js(), std::to_string(port), dir.file("server.ready")}, dir);
  hog_case(dir, srv.pid, port, {"--pid", std::to_string(srv.pid)});
}

TEST_CASE("fastify 5, live: 4xx/5xx, a server abort and a client disconnect, each counted per path and tenant") {
  const std::string node = node_with("fastify");
  TempDir dir;
  const int port = test_port(3);
  Server srv({node, fastify_js(), std::to_string(port), dir.file("server.ready")}, dir);
  errors_case(dir, srv.pid, port);
}

TEST_CASE("fastify 5 over TLS (Node's bundled OpenSSL): the connections counted and said, no request row invented") {
  const std::string node = node_with("fastify");
  node_with("openai");
  need(::access("/usr/bin/openssl", X_OK) == 0, "openssl is not installed (scripts/install-deps.sh --tests)");
  TempDir dir;
  make_cert(dir);
  const int port = test_port(0);
  Server srv({node, fastify_js(), std::to_string(port), dir.file("server.ready"), "--tls", dir.file("cert.pem"),
              dir.file("key.pem")},
             dir);
  Tracer t(dir, {"--pid", std::to_string(srv.pid), "--no-stack", "--engine-metrics-interval", "200ms"});
  // One TLS connection per request (a Python client that closes each), then the SDK's.
  auto c = run_process({kPython, "-c",
                        "import ssl, socket, sys\n"
                        "ctx = ssl.create_default_context(cafile=sys.argv[2])\n"
                        "for i in range(12):\n"
                        "  with ctx.wrap_socket(socket.create_connection(('127.0.0.1', int(sys.argv[1]))), server_hostname='127.0.0.1') as s:\n"
                        "    s.sendall(b'GET /hello HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n')\n"
                        "    assert s.recv(4096).startswith(b'HTTP/1.1 200')\n",
                        std::to_string(port), dir.file("cert.pem")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  const auto sdk = run_openai_client(dir, port, 8, true);
  CHECK(sdk.size() == 8);
  sleep_ms(800);
  REQUIRE(t.stop(SIGINT) == 0);
  CAPTURE(t.log());
  // Counted: the 12 closed connections and the SDK's pooled ones (at least one, at most one
  // per request); no row, since none of their bytes could be read as HTTP.
  const int64_t tls = stat_of(t.db(), "http_tls_connections");
  MESSAGE("TLS connections counted: " << tls);
  CHECK(tls >= 12 + 1);
  CHECK(tls <= 12 + 8);
  CHECK(q_int(t.db(), "SELECT count(*) FROM requests WHERE server_pid = " + std::to_string(srv.pid)) == 0);
  // Never seen speaking (plain) HTTP: never scraped, so no plaintext GET hit its TLS port.
  CHECK(stat_of(t.db(), "engine_scrape_connections") == 0);
  // Said: `causeway check` tells which TLS is read and which is counted.
  auto check = run_causeway({"check", "--json"});
  const json doc = json::parse(check.out);
  bool said = false;
  for (const json& item : doc["checks"])
    if (item.value("name", "") == "tls") said = item.dump().find("http_tls_connections") != std::string::npos;
  CHECK_MESSAGE(said, check.out);
}
