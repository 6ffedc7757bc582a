// Request capture on Python servers from Debian (docs/INFERENCE.md "Tested stacks"): aiohttp
// (python3-aiohttp) and uvicorn serving an ASGI app (python3-uvicorn), both asyncio. Checks
// against the clients' own records: every request stored once with its peer from the kernel
// socket, causeway's scrapes never stored and counted exactly, the server scheduled whether
// found by --pid alone or by --http-port alone, 3 x 5,000 concurrent connections with no
// record lost and no user request taken for a scrape, the `openai` SDK's streamed chat
// completions.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include "tests/bpf/requests_stacks_support.h"

using namespace causeway;
using namespace causeway::test;
using namespace causeway::test::stacks;

namespace {

void need_module(const char* module, const char* why) {
  need(run_process({kPython, "-c", std::string("import ") + module}).exit_code == 0, why);
}

std::vector<std::string> uvicorn_argv(const TempDir& dir, int port) {
  need_module("uvicorn", "python3-uvicorn is not installed (scripts/install-deps.sh --tests)");
  return {kPython, servers_dir() + "/uvicorn_app.py", std::to_string(port), dir.file("server.ready")};
}

}  // namespace

TEST_CASE("aiohttp, 3 x 5,000 concurrent connections, found by --http-port alone: every request stored with its peer, no scrape, no record lost") {
  need_module("aiohttp", "python3-aiohttp is not installed (scripts/install-deps.sh --tests)");
  TempDir dir;
  const int port = test_port(0);
  Server srv({kPython, servers_dir() + "/aiohttp_server.py", std::to_string(port), dir.file("server.ready")}, dir);
  Tracer t(dir, {"--http-port", std::to_string(port), "--no-stack", "--engine-metrics-interval", "200ms"});
  run_client(dir, port, 5000, 3);
  sleep_ms(1000);
  REQUIRE(t.stop(SIGINT) == 0);
  check_trace(t.db(), t.log(), srv.pid, client_results(dir.file("client.json")), 15000);
}

TEST_CASE("uvicorn (ASGI), found by --pid alone: bursts and the openai SDK's streamed chat completions, each once with its peer, no scrape") {
  (void)node_with("openai");  // before anything starts: a skip (exit 77) runs no destructor
  TempDir dir;
  const int port = test_port(1);
  Server srv(uvicorn_argv(dir, port), dir);
  bursts_and_sdk_case(dir, srv.pid, port, {"--pid", std::to_string(srv.pid)});
}

TEST_CASE("uvicorn, live: 4xx/5xx, a server abort and a client disconnect, each counted per path and tenant") {
  TempDir dir;
  const int port = test_port(3);
  Server srv(uvicorn_argv(dir, port), dir);
  errors_case(dir, srv.pid, port);
}

TEST_CASE("uvicorn, a CPU hog pinned on its CPU, found by --http-port alone: the hog named as the culprit of the requests it slowed, never causeway") {
  TempDir dir;
  const int port = test_port(2);
  Server srv(uvicorn_argv(dir, port), dir);
  hog_case(dir, srv.pid, port, {"--http-port", std::to_string(port)});
}
