// What the live request tests of each HTTP stack share (tests/bpf/test_requests_node_bpf.cpp,
// test_requests_python_bpf.cpp, test_requests_go_cpp_bpf.cpp): starting the servers of
// tests/servers/ and its clients, the client's own record of what it sent, and the checks each
// stack must pass (docs/INFERENCE.md "Tested stacks"): every request stored once with its peer,
// no scrape of causeway's stored (and the scrapes counted exactly), the server scheduled like
// a CUDA process, the `openai` SDK's streams, and errors / aborts / disconnects.
#pragma once

#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/bpf/collector_harness.h"

namespace causeway::test::stacks {

inline const char* kPython = "/usr/bin/python3";

std::string servers_dir();
// Prints SKIPPED: why, exits 77, unless ok.
void need(bool ok, const char* why);
// A program on PATH, as a full path (spawn() execs without a PATH search); "" when absent.
std::string on_path(const std::string& name);
// node with tests/servers/node_modules/<module> installed; skips the test otherwise.
std::string node_with(const std::string& module);
// A port of this test's own (other tests and helpers' servers run on the same host).
int test_port(int k);

// request_id → peer as the client saw its own end (status 200 only); the others counted.
struct ClientRun {
  std::map<std::string, std::string> peer_of;
  int not_ok = 0;
};
ClientRun client_results(const std::string& path);

// request_id → peer of the stored requests of one server ("" path: every path).
std::map<std::string, std::string> stored(const std::string& db, pid_t server, const std::string& path);
int64_t stat_of(const std::string& db, const std::string& name);

// A server the test started, stopped when the test case ends (however it ends).
struct Server {
  pid_t pid;
  Server(const std::vector<std::string>& argv, const TempDir& dir);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
};

// tests/servers/burst_client.py: `rounds` of `connections` opened together, one GET each.
// Request ids <prefix><round>-<i>.
void run_client(const TempDir& dir, int port, int connections, int rounds, const std::string& path = "/hello",
                const std::string& out = "client.json", const std::string& prefix = "r");
// tests/servers/openai_client.js: `requests` streamed chat completions through the `openai`
// SDK, each with its content chunks counted; returns request_id → chunks.
std::map<std::string, int> run_openai_client(const TempDir& dir, int port, int requests, bool tls = false);

// The SDK's requests (run_openai_client) as stored: each once, streamed, status 200, from
// loopback, with as many content events as the SDK handed over chunks.
void check_sdk_requests(const std::string& db, pid_t server, const std::map<std::string, int>& sdk);

// The checks every stack makes once the trace has stopped: exactly the client's requests on
// `path`, each with its peer, no record lost, no scrape stored (and each scrape connection the
// server took counted as excluded), and the server scheduled, with its processes row.
// other: the requests on other paths the test sent.
void check_trace(const std::string& db, const std::string& log, pid_t server, const ClientRun& sent, size_t expected,
                 const std::string& path = "/hello", size_t other = 0);

// After tests/servers/errors_client.py: each of its requests stored with what happened
// (404/500 status, end_reason aborted or disconnected), and `requests --json` counting them
// per path and tenant.
void check_errors(const std::string& db, pid_t server, const std::string& errors_json);
// The server found by --pid alone: 20 ordinary requests, then errors_client.py's 8 failed
// exchanges (tenant tenant-errors), then check_errors.
void errors_case(const TempDir& dir, pid_t server, int port);

// The server found by `find_by` alone (--pid S or --http-port P): 300 GET /hello from
// burst_client.py and 40 streamed chat completions from the `openai` SDK, then check_trace
// and check_sdk_requests.
void bursts_and_sdk_case(const TempDir& dir, pid_t server, int port, const std::vector<std::string>& find_by);

// A CPU hog pinned on the server's CPU (docs/INFERENCE.md "Tested stacks"): the server, every
// thread of it, pinned to one CPU, found by `find_by` alone; 15 sequential GET /spin?ms=20
// (20 ms of the server's CPU time each) before a busy loop named `hog_spin` starts on that
// CPU, 15 while it runs. `causeway requests` names the hog as the cpu_contention culprit of
// the slow /spin requests, and so does the request chain `explain` stores; causeway itself is
// never a culprit. Skips with fewer than 2 CPUs.
void hog_case(const TempDir& dir, pid_t server, int port, const std::vector<std::string>& find_by);

// The server found by `find_by` alone: `rounds` bursts of `connections` GET /hello, then
// check_trace.
void bursts_case(const TempDir& dir, pid_t server, int port, const std::vector<std::string>& find_by, int connections,
                 int rounds);

// `causeway requests --db DB --json --slowest 0 …more`, parsed.
nlohmann::json requests_json(const std::string& db, const std::vector<std::string>& more = {});

}  // namespace causeway::test::stacks
