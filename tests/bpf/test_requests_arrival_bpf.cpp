// Requests timed from the kernel's arrival of their bytes (bpf/arrival.bpf.h; docs/INFERENCE.md
// "Arrival time") against an asyncio streaming server whose event loop is blocked in bursts
// (tests/testprogs/busy_api_server.py: a synchronous handler spins the loop), so requests wait
// unread in their sockets, and a client that times itself from the kernel
// (tests/testprogs/arrival_client.py: SO_TIMESTAMPNS receive times, CLOCK_REALTIME like the
// trace's Unix times). The client starts the bursts itself and sends kTimed requests into them
// (the burst's start comes back before the spin), so every run has the same number of
// requests that waited, whatever the host's load; the others land in a burst only by chance. Served plain, and served over TLS through
// the system libssl (asyncio's memory BIOs): there the plaintext comes from the SSL_read
// uprobes and the arrival from the unrecorded cipher reads before it (bpf/ssl.bpf.h
// ssl_read_arrival; each connection's first request from its recorded cipher reads).
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "tests/bpf/collector_harness.h"
#include "tests/bpf/tls_certificate.h"

using namespace causeway;
using namespace causeway::test;
using json = nlohmann::json;

namespace {

const char* kArrivalPython = "/usr/bin/python3";
constexpr size_t kRequests = 80;  // at least: a request the client failed to time into a burst is one more
constexpr size_t kTimed = 16;     // sent with >= 20 ms of a burst (60 ms of CPU work) certainly left

std::vector<json> json_lines(const std::string& path) {
  std::vector<json> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

struct ServerReap {
  pid_t pid;
  ~ServerReap() {
    ::kill(pid, SIGTERM);
    wait_exit(pid);
  }
};

enum class Served { plain, tls };

// The server (busy in bursts) and the client's command line, plain or TLS.
struct ArrivalRun {
  TempDir dir;
  int port = 21000 + static_cast<int>(::getpid() % 20000);
  std::vector<std::string> server, client;
};

void command_lines(ArrivalRun& run, Served how) {
  const TempDir& dir = run.dir;
  run.server = {kArrivalPython, source_dir() + "/tests/testprogs/busy_api_server.py", "--port", std::to_string(run.port),
                "--burst-ms", "60", "--step-ms", "8", "--ready-file", dir.file("server.ready"),
                "--bursts", dir.file("bursts.json")};
  run.client = {kArrivalPython, source_dir() + "/tests/testprogs/arrival_client.py", "--port", std::to_string(run.port),
                "--requests", std::to_string(kRequests), "--workers", "4", "--timed", std::to_string(kTimed),
                "--burst-ms", "60", "--left-ms", "20", "--out", dir.file("client.json")};
  if (how == Served::tls) {
    make_tls_certificate(dir);
    run.server.insert(run.server.end(), {"--cert", dir.file("cert.pem"), "--key", dir.file("key.pem")});
    run.client.push_back("--tls");
  }
}

// Exact: every request once, none invented, each with its wait; over TLS each read through libssl.
void check_rows(const std::string& db, const std::string& mine, size_t sent, Served how) {
  const auto n = static_cast<int64_t>(sent);
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE " + mine) == n);
  CHECK(q_int(db, "SELECT count(DISTINCT request_id) FROM requests WHERE " + mine) == n);
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE " + mine + " AND (status != 200 OR events != 4)") == 0);
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE " + mine + " AND tls = " + (how == Served::tls ? "1" : "0")) == n);
  if (how == Served::tls) {
    // 5 keep-alive connections (the bursts' own one too): each one's first request is timed
    // from its recorded cipher reads (before its first plaintext), the others from the
    // unrecorded ones.
    CHECK(q_int(db, "SELECT value FROM collector_stats WHERE name = 'http_tls_arrival_reads'") >= n - 4);
    CHECK(q_int(db, "SELECT value FROM collector_stats WHERE name = 'http_tls_cipher_skipped'") > 0);
  }
  // The wait is the read's lateness: read_end_ns - end_ns, never negative.
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE " + mine + " AND (api_wait_ns IS NULL OR api_wait_ns < 0 OR "
                  "api_wait_ns != read_end_ns - end_ns)") == 0);
}

// Traced against the client's own kernel-timestamped measure, request by request.
void check_against_client(const std::string& db, const std::string& mine, const std::vector<json>& client,
                          const std::vector<json>& bursts, Served how) {
  std::map<std::string, std::vector<int64_t>> traced;  // id → end_ns, ttft_ns, api_wait_ns, start_ns
  for (const auto& id : q_rows(db, "SELECT rowid FROM requests WHERE " + mine)) {
    const std::string where = " FROM requests WHERE rowid = " + std::to_string(id[0]);
    traced[q_text(db, "SELECT request_id" + where)] = q_rows(db, "SELECT end_ns, ttft_ns, api_wait_ns, start_ns" + where)[0];
  }
  size_t close = 0, arrival_close = 0, matched = 0, burst_hit = 0, burst_waited = 0, kernel_ts = 0, timed = 0,
         timed_hit = 0, timed_waited = 0;
  for (const json& m : client) {
    auto it = traced.find(m["request_id"].get<std::string>());
    if (it == traced.end()) continue;
    ++matched;
    kernel_ts += m.value("kernel_ts", false);
    const int64_t end_ns = it->second[0], ttft = it->second[1], wait = it->second[2];
    const int64_t send_end = m["send_end_ns"], send_start = m["send_start_ns"], ttft_c = m["ttft_ns"];
    const double diff = std::abs(static_cast<double>(ttft - ttft_c));
    if (diff <= std::max(2e6, 0.05 * static_cast<double>(ttft_c))) ++close;
    else MESSAGE(m["request_id"].get<std::string>() << ": TTFT client " << ttft_c / 1e6 << " ms, traced " << ttft / 1e6 << " ms");
    // The last byte arrived inside the client's sendall (loopback delivers in the sender's call).
    if (end_ns >= send_start - 1'000'000 && end_ns <= send_end + 1'000'000) ++arrival_close;
    // Sent while the event loop spun with 5 ms or more of the burst left: it waited unread.
    // The whole sendall inside the burst: the bytes arrive somewhere inside it, and a client
    // preempted after a send begun before the burst reads its send_end clock inside one.
    const bool is_timed = m.value("timed", false);
    timed += is_timed;
    for (const json& b : bursts) {
      const int64_t from = b["from_ns"], to = b["to_ns"];
      if (send_start > from && to - send_end >= 5'000'000) {
        ++burst_hit;
        timed_hit += is_timed;
        const bool waited = wait >= (to - send_end) / 2;
        burst_waited += waited;
        timed_waited += is_timed && waited;
        if (!waited) MESSAGE(m["request_id"].get<std::string>() << ": sent " << (to - send_end) / 1e6 << " ms before a burst's end, API wait " << wait / 1e6 << " ms");
      }
    }
  }
  REQUIRE(matched == client.size());
  std::printf("TTFT within max(2 ms, 5%%) of the client's: %zu/%zu; arrival inside the client's send: %zu/%zu; sent in a "
              "burst: %zu, of which waited: %zu (timed by the client: %zu, in a burst by the server's log: %zu, waited: %zu); "
              "client first tokens with a kernel receive time: %zu\n",
              close, matched, arrival_close, matched, burst_hit, burst_waited, timed, timed_hit, timed_waited, kernel_ts);
  // The bar (6 runs on a busy 2-core host: 78-80 of 80). The misses are the client's
  // own send-end time, a user-space clock read after sendall, late when the client is
  // preempted inside it. Over TLS the arrival side holds the same (arrival_close below), but
  // the first token is the SSL_write's entry, before the event loop sends its ciphertext: a
  // server preempted in between shows it 5-25 ms before the client gets it (7 runs at load
  // 15-26: 80, 76, 72, 77, 66, 73, 73 of 80; docs/INFERENCE.md "Arrival time"), so the bar
  // there is lower until writes are stamped at their cipher send.
  const double ttft_bar = how == Served::tls ? 0.8 : 0.95;
  CHECK(static_cast<double>(close) >= ttft_bar * static_cast<double>(matched));
  CHECK(static_cast<double>(arrival_close) >= 0.95 * static_cast<double>(matched));
  // The client's timing against the server's own log of its bursts: each request it timed
  // arrived while the loop spun, and the trace saw each of them wait.
  CHECK(timed == kTimed);
  CHECK(timed_hit == kTimed);
  CHECK(timed_waited == kTimed);
  CHECK(static_cast<double>(kernel_ts) >= 0.9 * static_cast<double>(matched));
  CHECK(static_cast<double>(burst_waited) >= 0.9 * static_cast<double>(burst_hit));
}

// The server's main thread, asyncio's loop (pid = tid, comm python3), as api_server_busy's culprit.
void check_busy_culprit(const json& culprit, pid_t server) {
  CHECK(culprit["pid"] == server);
  CHECK(culprit["tid"] == server);
  CHECK(culprit["comm"] == "python3");
}

// What the user sees: the wait in percentiles and per request, and its cause with the thread.
void check_user_view(const std::string& db, pid_t server, const std::vector<json>& client) {
  // The completions judged (not the bursts' own /burn requests); the evidence is everything.
  auto r = run_causeway({"requests", "--db", db, "--json", "--pid", std::to_string(server), "--path", "/v1/completions",
                         "--quantile", "0.9", "--slowest", std::to_string(client.size())});
  REQUIRE(r.exit_code == 0);
  const json d = json::parse(r.out)["requests"];
  CAPTURE(d["tail"].dump());
  CHECK(d["api_wait_ms"]["max"].get<double>() >= 5.0);
  CHECK(d["slowest"][0]["api_wait_ms"].get<double>() > 0);
  const json* busy = nullptr;
  for (const json& k : d["tail"]["causes"]) {
    std::printf("TTFT tail (%d units): %s share %.3f, %d requests\n", d["tail"]["units"].get<int>(),
                k["cause"].get<std::string>().c_str(), k["share_time"].get<double>(), k["requests"].get<int>());
    if (k["cause"] == "api_server_busy") busy = &k;
  }
  REQUIRE(busy != nullptr);
  CHECK((*busy)["requests"].get<int>() >= 3);
  check_busy_culprit((*busy)["culprit"], server);
  // Each request the client timed into a burst: the loop ran the burst's CPU work (at least
  // 20 of its 60 ms after the request arrived, since the request was sent within 40 ms of its
  // start) while the request sat unread, so api_server_busy, the most specific claim on its
  // wait, takes a part of it whatever the host's load added beside it (cpu_contention: the
  // loop's thread runnable, off CPU): at least 5 ms of its time above the median TTFT.
  std::map<std::string, const json*> listed;
  for (const json& s : d["slowest"]) listed[s["request_id"].get<std::string>()] = &s;
  size_t timed_busy = 0;
  for (const json& m : client) {
    if (!m.value("timed", false)) continue;
    auto it = listed.find(m["request_id"].get<std::string>());
    REQUIRE(it != listed.end());
    const json* claim = nullptr;
    for (const json& c : (*it->second)["causes"])
      if (c["cause"] == "api_server_busy") claim = &c;
    if (!claim || (*claim)["lost_ms"].get<double>() < 5) {
      MESSAGE(it->first << ": TTFT " << (*it->second)["ttft_ms"] << " ms, causes " << (*it->second)["causes"].dump());
      continue;
    }
    check_busy_culprit((*claim)["culprit"], server);
    ++timed_busy;
  }
  CHECK(timed_busy == kTimed);
  auto text = run_causeway({"requests", "--db", db, "--pid", std::to_string(server)});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("API wait p50") != std::string::npos);
}

void ttft_from_arrival(Served how) {
  if (::access(kArrivalPython, X_OK) != 0) {
    std::printf("SKIPPED: python3 is not installed\n");
    std::exit(77);
  }
  ArrivalRun run;
  command_lines(run, how);
  const pid_t server = spawn(run.server, run.dir.file("server.log"));
  const ServerReap reap{server};
  wait_for_file(run.dir.file("server.ready"), 30000);
  Tracer t(run.dir, {"--pid", std::to_string(server), "--http-port", std::to_string(run.port), "--no-stack"});
  auto c = run_process(run.client);
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  CAPTURE(t.log());

  const auto client = json_lines(run.dir.file("client.json"));
  const auto bursts = json_lines(run.dir.file("bursts.json"));
  REQUIRE(client.size() >= kRequests);
  REQUIRE(bursts.size() >= kTimed);
  const std::string mine = "server_pid = " + std::to_string(server) + " AND request_id LIKE 'arr-%'";
  check_rows(t.db(), mine, client.size(), how);
  check_against_client(t.db(), mine, client, bursts, how);
  check_user_view(t.db(), server, client);
}

}  // namespace

TEST_CASE("arrival: TTFT from the request's arrival matches a kernel-timestamped client; the API wait and its busy thread") {
  ttft_from_arrival(Served::plain);
}

TEST_CASE("arrival over TLS (system libssl, memory BIOs): the same, from the cipher bytes' arrival") {
  ttft_from_arrival(Served::tls);
}
