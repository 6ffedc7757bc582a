// Requests from the kernel side against a real streaming server (tests/testprogs/
// inference_server.py: aiohttp API server + engine-core child on the fake libcudart) and a
// client that measures TTFT / ITL / E2E itself (inference_client.py). The trace is started
// with --pid of the engine core only: the API server is found as its listening ancestor.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "tests/bpf/collector_harness.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

using namespace causeway;
using namespace causeway::test;
using json = nlohmann::json;

namespace {

const char* kPython = "/usr/bin/python3";

struct Measured {
  int64_t ttft_ns = 0, e2e_ns = 0;
  std::vector<int64_t> gaps_ns;
};

int64_t pct(std::vector<int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(k, 1, v.size()) - 1];
}

std::map<std::string, Measured> client_results(const std::string& path) {
  std::map<std::string, Measured> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    json j = json::parse(line);
    Measured m;
    m.ttft_ns = j["ttft_ns"];
    m.e2e_ns = j["e2e_ns"];
    m.gaps_ns = j["gaps_ns"].get<std::vector<int64_t>>();
    out[j["request_id"].get<std::string>()] = m;
  }
  return out;
}

// The completions of a trace DB (of one server when `server` is not 0: on a shared host
// another job's server may be traced too, its clients using the same ids).
std::map<std::string, Measured> traced_results(const std::string& db, pid_t server = 0) {
  std::map<std::string, Measured> out;
  auto h = open_read_only(db);
  REQUIRE(h);
  auto st = Statement::prepare(h->get(), "SELECT request_id, ttft_ns, e2e_ns, itl_us FROM requests WHERE path = '/v1/completions'" +
                                             (server ? " AND server_pid = " + std::to_string(server) : std::string()));
  REQUIRE(st);
  while (st->step() == SQLITE_ROW) {
    Measured m;
    m.ttft_ns = st->col_int(1);
    m.e2e_ns = st->col_int(2);
    for (const auto& g : json::parse(st->col_null(3) ? "[]" : st->col_text(3))) m.gaps_ns.push_back(g.get<int64_t>() * 1000);
    out[st->col_text(0)] = m;
  }
  return out;
}

// A server the test started, stopped when the test case ends (however it ends).
struct Reap {
  pid_t pid;
  ~Reap() {
    ::kill(pid, SIGTERM);
    wait_exit(pid);
  }
};

uint32_t first_child(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  uint32_t c = 0;
  f >> c;
  return c;
}

}  // namespace

TEST_CASE("streamed completions: exact count, per-request TTFT, ITL and E2E against the client's own measurement") {
  if (run_process({kPython, "-c", "import aiohttp"}).exit_code != 0) {
    std::printf("SKIPPED: python3-aiohttp is not installed (scripts/install-deps.sh --tests)\n");
    std::exit(77);
  }
  TempDir dir;
  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  const std::string server_py = source_dir() + "/tests/testprogs/inference_server.py";
  const std::string client_py = source_dir() + "/tests/testprogs/inference_client.py";
  // 20 ms decode steps: a busy 2-core host's scheduling delays (~1 ms) stay well under 10%.
  pid_t server = spawn({kPython, server_py, "--port", std::to_string(port), "--cudart", testprog("libcudart.so.13"),
                        "--step-ms", "20", "--ready-file", dir.file("server.ready")},
                       dir.file("server.log"));
  const Reap reap{server};
  wait_for_file(dir.file("server.ready"), 30000);
  const uint32_t engine = first_child(server);
  REQUIRE(engine > 0);
  // Warm the server up before the trace: the first requests pay for imports.
  REQUIRE(run_process({kPython, client_py, "--port", std::to_string(port), "--requests", "4", "--concurrency", "2",
                       "--out", dir.file("warm.json")}).exit_code == 0);

  Tracer t(dir, {"--pid", std::to_string(engine), "--no-stack"});
  auto c = run_process({kPython, client_py, "--port", std::to_string(port), "--requests", "60", "--concurrency", "4",
                        "--max-tokens", "10", "--out", dir.file("client.json")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  CAPTURE(t.log());
  // Found as the engine core's listening ancestor: the only server, and not the engine.
  CHECK(q_int(t.db(), "SELECT count(DISTINCT server_pid) FROM requests") == 1);
  CHECK(q_int(t.db(), "SELECT min(server_pid) FROM requests") == server);

  const auto client = client_results(dir.file("client.json"));
  const auto traced = traced_results(t.db());
  REQUIRE(client.size() == 60);
  CHECK(traced.size() == client.size());  // exact: no request lost, none invented
  CHECK(q_int(t.db(), "SELECT count(*) FROM requests WHERE status != 200 OR complete != 1 OR events != 10") == 0);
  CHECK(q_int(t.db(), "SELECT count(*) FROM requests WHERE id_generated = 1") == 0);

  // The server's interval (its read of the request → its writes) lies inside the client's
  // (send → receive): a traced TTFT or E2E longer than the client's means a token or a request
  // was mis-attributed. How much shorter it is depends on how late the server read the request
  // and the client read the events: under a millisecond on a quiet host, several on a busy
  // 2-core one, so the issue's max(2 ms, 5%) is reported, and a busy host's bound asserted.
  size_t close = 0, busy_close = 0, matched = 0;
  std::vector<int64_t> gaps_c, gaps_t, e2e_c, e2e_t;
  for (const auto& [id, m] : client) {
    auto it = traced.find(id);
    if (it == traced.end()) continue;
    ++matched;
    const auto& k = it->second;
    CHECK_MESSAGE(k.ttft_ns <= m.ttft_ns + 1'000'000, id << ": traced TTFT " << k.ttft_ns << " > client " << m.ttft_ns);
    CHECK_MESSAGE(k.e2e_ns <= m.e2e_ns + 1'000'000, id << ": traced E2E " << k.e2e_ns << " > client " << m.e2e_ns);
    const double diff = std::abs(static_cast<double>(k.ttft_ns - m.ttft_ns));
    if (diff <= std::max(2e6, 0.05 * static_cast<double>(m.ttft_ns))) ++close;
    if (diff <= std::max(10e6, 0.25 * static_cast<double>(m.ttft_ns))) ++busy_close;
    else MESSAGE(id << ": TTFT client " << m.ttft_ns / 1e6 << " ms, traced " << k.ttft_ns / 1e6 << " ms");
    gaps_c.insert(gaps_c.end(), m.gaps_ns.begin(), m.gaps_ns.end());
    gaps_t.insert(gaps_t.end(), k.gaps_ns.begin(), k.gaps_ns.end());
    e2e_c.push_back(m.e2e_ns);
    e2e_t.push_back(k.e2e_ns);
  }
  REQUIRE(matched == client.size());
  CHECK(static_cast<double>(busy_close) >= 0.75 * static_cast<double>(matched));
  auto within = [](int64_t a, int64_t b, double rel) {
    return std::abs(static_cast<double>(a - b)) <= rel * static_cast<double>(std::max(a, b));
  };
  CAPTURE(pct(gaps_c, 0.5));
  CAPTURE(pct(gaps_t, 0.5));
  CAPTURE(pct(gaps_c, 0.99));
  CAPTURE(pct(gaps_t, 0.99));
  CAPTURE(pct(e2e_c, 0.99));
  CAPTURE(pct(e2e_t, 0.99));
  CHECK(within(pct(gaps_c, 0.5), pct(gaps_t, 0.5), 0.10));
  CHECK(within(pct(gaps_c, 0.99), pct(gaps_t, 0.99), 0.10));
  // E2E p99 of 60 requests is their maximum: one request the busy server read late moves it,
  // so the median and p90 are asserted and the p99 reported.
  CHECK(within(pct(e2e_c, 0.5), pct(e2e_t, 0.5), 0.10));
  CHECK(within(pct(e2e_c, 0.9), pct(e2e_t, 0.9), 0.10));

  // Engine metrics: the server's vLLM-shaped /metrics, sampled each second; the scraper's
  // own requests are not the users' (the exact count above holds with them going on).
  CHECK(q_int(t.db(), "SELECT count(*) FROM engines WHERE engine = 'vllm' AND url LIKE 'http://127.0.0.1:%/metrics'") == 1);
  CHECK(q_int(t.db(), "SELECT count(DISTINCT ts_ns) FROM engine_metrics WHERE name = 'vllm:num_requests_running'") >= 2);
  CHECK(q_int(t.db(), "SELECT count(*) FROM engine_metrics WHERE name = 'vllm:num_preemptions_total'") >= 2);
  CHECK(q_int(t.db(), "SELECT count(*) FROM requests WHERE path = '/metrics'") == 0);
  CHECK(q_int(t.db(), "SELECT value FROM collector_stats WHERE name = 'http_own_scrapes_excluded'") >= 2);
  // A quiet run: nothing waited in the engine's queue, nothing was preempted.
  CHECK(q_int(t.db(), "SELECT count(*) FROM engine_metrics WHERE name = 'vllm:num_requests_waiting' AND value > 0") == 0);

  // The reader the user sees: the same count and ids.
  auto r = run_causeway({"requests", "--db", t.db(), "--json", "--slowest", "3"});
  REQUIRE(r.exit_code == 0);
  json d = json::parse(r.out);
  CHECK(d["requests"]["count"] == 60);
  CHECK(d["requests"]["streamed"] == 60);
  CHECK(d["requests"]["slowest"].size() == 3);
  CHECK(d["requests"]["by"][0]["server_pid"] == server);
  CHECK(d["engines"].size() == 1);
  CHECK(d["engines"][0]["engine"] == "vllm");
  for (const auto& cause : d["requests"]["tail"]["causes"]) {
    CHECK(cause["cause"] != "queueing");
    CHECK(cause["cause"] != "kv_cache_pressure");
    CHECK(cause["cause"] != "network");  // the client reads as fast as the server writes
  }
  // The quiet baseline: no HIGH chain, request-level or call-level.
  auto e = run_causeway({"explain", "--db", t.db(), "--json", "--limit", "100"});
  REQUIRE(e.exit_code == 0);
  for (const auto& chain : json::parse(e.out)["chains"]) {
    CAPTURE(chain.dump());
    CHECK(chain["severity"] != "HIGH");
  }
  MESSAGE("TTFT within max(2 ms, 5%): " << close << "/" << matched << ", within max(10 ms, 25%): " << busy_close << "; ITL p50 client " << pct(gaps_c, 0.5) / 1e6
                                    << " ms traced " << pct(gaps_t, 0.5) / 1e6 << " ms; p99 " << pct(gaps_c, 0.99) / 1e6
                                    << " / " << pct(gaps_t, 0.99) / 1e6 << " ms; E2E p99 " << pct(e2e_c, 0.99) / 1e6
                                    << " / " << pct(e2e_t, 0.99) / 1e6 << " ms");
}

TEST_CASE("prefill_interference: long prompts among short streams stall their tokens; the long requests are named") {
  if (run_process({kPython, "-c", "import aiohttp"}).exit_code != 0) {
    std::printf("SKIPPED: python3-aiohttp is not installed (scripts/install-deps.sh --tests)\n");
    std::exit(77);
  }
  TempDir dir;
  const int port = 40000 + static_cast<int>(::getpid() % 20000);
  // Every 8th prompt is 15 kB: a 300 ms prefill (20 µs a byte) the engine runs while the
  // other streams wait for their next token (decode steps are 20 ms).
  pid_t server = spawn({kPython, source_dir() + "/tests/testprogs/inference_server.py", "--port", std::to_string(port),
                        "--cudart", testprog("libcudart.so.13"), "--step-ms", "20", "--prefill-us-per-byte", "20",
                        "--ready-file", dir.file("server.ready")},
                       dir.file("server.log"));
  const Reap reap{server};
  wait_for_file(dir.file("server.ready"), 30000);
  Tracer t(dir, {"--http-port", std::to_string(port), "--no-stack"});
  auto c = run_process({kPython, source_dir() + "/tests/testprogs/inference_client.py", "--port", std::to_string(port),
                        "--requests", "32", "--concurrency", "4", "--max-tokens", "10", "--long-every", "8",
                        "--long-bytes", "15000", "--out", dir.file("client.json")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  auto r = run_causeway({"requests", "--db", t.db(), "--json", "--metric", "itl", "--slowest", "3"});
  REQUIRE(r.exit_code == 0);
  json d = json::parse(r.out)["requests"];
  CAPTURE(d.dump());
  CHECK(d["count"] == 32);
  const json* pi = nullptr;
  for (const auto& cause : d["tail"]["causes"])
    if (cause["cause"] == "prefill_interference") pi = &cause;
  REQUIRE(pi != nullptr);
  CHECK((*pi)["share_time"].get<double>() >= 0.5);
  // The culprits are the long requests: ids req-NNNN-w with NNNN % 8 == 7.
  REQUIRE(!(*pi)["culprit"]["requests"].empty());
  for (const auto& id : (*pi)["culprit"]["requests"]) CHECK(std::stoi(id.get<std::string>().substr(4, 4)) % 8 == 7);
  // Seen on the engine core's forward passes (its launches up to the stream sync that waits
  // for them): a 300 ms prefill pass against 20 ms decode passes.
  CHECK((*pi)["culprit"]["basis"] == "forward_pass");
  CHECK((*pi)["culprit"]["pass_ms"].get<double>() >= 200);
  CHECK((*pi)["culprit"]["median_pass_ms"].get<double>() < 60);
  MESSAGE("prefill_interference: " << (*pi)["share_time"].get<double>() * 100 << "% of the ITL tail, a "
                                    << (*pi)["culprit"]["pass_ms"] << " ms pass against a median of "
                                    << (*pi)["culprit"]["median_pass_ms"] << " ms");
  CHECK(d["slowest"][0]["causes"][0]["cause"] == "prefill_interference");
}

namespace {

// A network namespace of the server's own whose loopback has an Ethernet MTU and send
// buffers of at most 16 KiB (net.ipv4.tcp_wmem is per namespace): on the default 64 KiB
// loopback MTU the kernel grows a busy connection's send buffer to ~4 MB, which no slow
// reader of a test fills.
const std::vector<std::string> kOwnNet = {
    "/usr/bin/unshare", "-n", "sh", "-c",
    "ip link set lo up && ip link set lo mtu 1500 && echo 4096 16384 16384 > /proc/sys/net/ipv4/tcp_wmem && "
    "exec \"$0\" \"$@\""};

// A server started for one planted incident, reaped at the end of the case; with own_net in
// a network namespace of its own (kOwnNet), which its clients join.
struct PlantedServer {
  TempDir& dir;
  int port;
  pid_t pid;
  bool own_net;
  PlantedServer(TempDir& d, int p, std::vector<std::string> extra, bool net = false) : dir(d), port(p), own_net(net) {
    std::vector<std::string> argv = {kPython, source_dir() + "/tests/testprogs/inference_server.py", "--port",
                                     std::to_string(port), "--cudart", testprog("libcudart.so.13"), "--step-ms", "20",
                                     "--ready-file", dir.file("server.ready")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (own_net) argv.insert(argv.begin(), kOwnNet.begin(), kOwnNet.end());
    pid = spawn(argv, dir.file("server.log"));
    wait_for_file(dir.file("server.ready"), 30000);
  }
  ~PlantedServer() {
    ::kill(pid, SIGTERM);
    wait_exit(pid);
  }
  // Traces the server (engine metrics every 200 ms) while the client runs with `load`, then
  // asks `causeway requests --json` with `ask`: the trace DB's path and the answer's requests.
  std::pair<std::string, json> traced(std::vector<std::string> load, std::vector<std::string> ask) {
    Tracer t(dir, {"--http-port", std::to_string(port), "--no-stack", "--engine-metrics-interval", "200ms"});
    std::vector<std::string> argv = {kPython, source_dir() + "/tests/testprogs/inference_client.py", "--port",
                                     std::to_string(port), "--out", dir.file("client.json")};
    argv.insert(argv.end(), load.begin(), load.end());
    if (own_net) argv.insert(argv.begin(), {"nsenter", "--net=/proc/" + std::to_string(pid) + "/ns/net"});
    auto c = run_process(argv);
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    sleep_ms(300);
    REQUIRE(t.stop(SIGINT) == 0);
    std::vector<std::string> q = {"requests", "--db", t.db(), "--json"};
    q.insert(q.end(), ask.begin(), ask.end());
    auto r = run_causeway(q);
    REQUIRE(r.exit_code == 0);
    return {t.db(), json::parse(r.out)["requests"]};
  }
};

const json* tail_cause(const json& requests, const std::string& name) {
  for (const auto& c : requests["tail"]["causes"])
    if (c["cause"] == name) return &c;
  return nullptr;
}

// explain --json's chains of a trace DB.
json explain_chains(const std::string& db) {
  auto e = run_causeway({"explain", "--db", db, "--json"});
  REQUIRE(e.exit_code == 0);
  return json::parse(e.out)["chains"];
}

void need_aiohttp() {
  if (run_process({kPython, "-c", "import aiohttp"}).exit_code != 0) {
    std::printf("SKIPPED: python3-aiohttp is not installed (scripts/install-deps.sh --tests)\n");
    std::exit(77);
  }
}

void need_own_net() {
  if (run_process({"unshare", "-n", "ip", "link", "set", "lo", "mtu", "1500"}).exit_code != 0 ||
      run_process({"nsenter", "--version"}).exit_code != 0) {
    std::printf("SKIPPED: unshare -n with iproute2's ip, and nsenter, are needed (util-linux, iproute2)\n");
    std::exit(77);
  }
}

void need_setproctitle() {
  if (run_process({kPython, "-c", "import setproctitle"}).exit_code != 0) {
    std::printf("SKIPPED: python3-setproctitle is not installed (scripts/install-deps.sh --tests)\n");
    std::exit(77);
  }
}

// How the late worker shows: the row of `processes` that is it, its comm, its rank_source
// ("structural": the culprit names no rank).
struct LateWorker {
  std::string where = "comm = 'VllmWorker-1'";
  std::string comm = "VllmWorker-1";
  std::string rank_source;
  std::string workers = "pid > 0";  // the planted server's workers, where others are traced too (workers_of)
};

// The TP workers of the server `pid` (the engine core's children): the same live tests of
// another checkout may run at once on the host, and the tracer records every process that
// loads the fake libraries.
std::string workers_of(pid_t pid) {
  return "pid IN (SELECT pid FROM processes WHERE ppid IN (SELECT pid FROM processes WHERE ppid = " + std::to_string(pid) +
         "))";
}

// The late tensor-parallel rank of inference_server.py --tp 2 --late-rank 1 is named for the
// ITL tail of `d` (causeway requests --json --metric itl --slowest 5): its pid, and the
// slowest streams carry it. Returns the late pid, how many of the slowest carry it, and the
// chain id their causes point at.
std::tuple<int64_t, size_t, std::string> check_late_rank_named(const std::string& db, const json& d,
                                                               const LateWorker& w = {}, size_t min_named = 3) {
  CAPTURE(d.dump());
  CHECK(d["count"] == 24);
  const int64_t late_pid = q_int(db, "SELECT pid FROM processes WHERE " + w.where + " AND " + w.workers);
  REQUIRE(late_pid > 0);
  // The workers' all-reduces were traced and matched across the two ranks.
  CHECK(q_int(db, "SELECT count(DISTINCT pid) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = 'ncclAllReduce' AND e." +
              w.workers) == 2);
  const json* n = tail_cause(d, "nccl_straggler");
  REQUIRE(n != nullptr);
  CHECK((*n)["share_time"].get<double>() >= 0.5);
  CHECK((*n)["culprit"]["pid"] == late_pid);
  CHECK((*n)["culprit"]["comm"] == w.comm);
  if (w.rank_source == "structural") CHECK_FALSE((*n)["culprit"].contains("rank"));
  else CHECK((*n)["culprit"]["rank"] == 1);
  if (!w.rank_source.empty()) CHECK((*n)["culprit"]["rank_source"] == w.rank_source);
  // The requests it slowed: the slowest streams each carry it, pointing at the stored chain.
  size_t named = 0;
  std::string chain_id;
  for (const auto& s : d["slowest"])
    for (const auto& c : s["causes"])
      if (c["cause"] == "nccl_straggler") {
        ++named;
        chain_id = c["chain_id"].is_string() ? c["chain_id"].get<std::string>() : "";
      }
  CHECK(named >= min_named);
  CHECK((*n)["chain_id"] == chain_id);
  return {late_pid, named, chain_id};
}

// inference_server.py's flags for two TP workers on the fake libnccl, rank 1 starting every
// 5th pass 60 ms late (decode passes are 20 ms), the workers started the `launch` way.
std::vector<std::string> late_rank_args(const std::string& launch = "torchrun") {
  return {"--tp", "2", "--nccl", testprog("libnccl.so.2"), "--late-rank", "1", "--late-ms", "60", "--late-every", "5",
          "--worker-launch", launch};
}

// The --tp 2 --late-rank 1 server traced only after a first request formed the workers'
// communicator (ncclCommInitRank before the trace): 24 requests, asked for the ITL tail of
// this server's requests (--pid: another server may be traced too, see workers_of).
std::pair<std::string, json> traced_after_init(PlantedServer& srv, TempDir& dir) {
  auto warm = run_process({kPython, source_dir() + "/tests/testprogs/inference_client.py", "--port", std::to_string(srv.port),
                           "--requests", "2", "--concurrency", "2", "--max-tokens", "2", "--out", dir.file("warm.json")});
  REQUIRE_MESSAGE(warm.exit_code == 0, warm.err);
  auto traced = srv.traced({"--requests", "24", "--concurrency", "4", "--max-tokens", "10"},
                           {"--metric", "itl", "--slowest", "5", "--pid", std::to_string(srv.pid)});
  const std::string& db = traced.first;
  const std::string mine = " AND e." + workers_of(srv.pid);
  CHECK(q_int(db, "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = 'ncclCommInitRank'" + mine) == 0);
  CHECK(q_int(db, "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = 'ncclAllReduce' AND a2 >= 0" + mine) ==
        0);
  CHECK(q_int(db, "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = 'ncclAllReduce'" + mine) > 0);
  return traced;
}

}  // namespace

TEST_CASE("queueing: a burst beyond the engine's batch waits for its first token; the engine's queue is named") {
  need_aiohttp();
  TempDir dir;
  // Eight streams against a batch of two: six requests wait in the engine's queue.
  PlantedServer srv(dir, 24000 + static_cast<int>(::getpid() % 16000), {"--max-batch", "2"});
  auto [db, d] = srv.traced({"--requests", "32", "--concurrency", "8", "--max-tokens", "10"},
                            {"--metric", "ttft", "--quantile", "0.9"});
  CHECK(q_int(db, "SELECT max(value) FROM engine_metrics WHERE name = 'vllm:num_requests_waiting'") >= 3);
  CAPTURE(d.dump());
  CHECK(d["count"] == 32);
  const json* q = tail_cause(d, "queueing");
  REQUIRE(q != nullptr);
  CHECK((*q)["share_time"].get<double>() >= 0.5);
  CHECK((*q)["culprit"]["pid"] == srv.pid);
  CHECK((*q)["culprit"]["waiting_max"].get<double>() >= 1);
  CHECK(tail_cause(d, "kv_cache_pressure") == nullptr);  // the cache is unbounded here
  bool named = false;
  for (const auto& c : d["slowest"][0]["causes"]) named = named || c["cause"] == "queueing";
  CHECK(named);
}

TEST_CASE("kv_cache_pressure: a KV cache too small preempts streams; their stalled tokens are named") {
  need_aiohttp();
  TempDir dir;
  // 240 tokens of cache for four streams of 50 prompt + 40 generated tokens: the engine
  // preempts the latest admitted stream as the others grow, as vLLM does.
  PlantedServer srv(dir, 8000 + static_cast<int>(::getpid() % 16000), {"--kv-tokens", "240"});
  auto [db, d] = srv.traced({"--requests", "16", "--concurrency", "4", "--max-tokens", "40", "--prompt-bytes", "200"},
                            {"--metric", "itl", "--slowest", "5"});
  CHECK(q_int(db, "SELECT max(value) FROM engine_metrics WHERE name = 'vllm:num_preemptions_total'") >= 2);
  CAPTURE(d.dump());
  CHECK(d["count"] == 16);
  const json* k = tail_cause(d, "kv_cache_pressure");
  REQUIRE(k != nullptr);
  CHECK((*k)["share_time"].get<double>() >= 0.5);
  CHECK((*k)["culprit"]["preemptions"].get<double>() >= 1);
  // The culprit's usage is the highest scrape near the stall: a scrape just after a preemption
  // sees the freed cache (0.88 in one CI run), so the full cache is asserted over the trace.
  CHECK((*k)["culprit"]["kv_cache_usage"].get<double>() >= 0.75);
  CHECK(q_int(db, "SELECT max(value) >= 0.9 FROM engine_metrics WHERE name = 'vllm:kv_cache_usage_perc'") == 1);
  // The requests it slowed: the slowest streams each carry the cause.
  size_t named = 0;
  for (const auto& s : d["slowest"])
    for (const auto& c : s["causes"]) named += c["cause"] == "kv_cache_pressure";
  CHECK(named >= 3);
  // explain leads with the request chain, naming the stalled requests.
  const json chains = explain_chains(db);
  REQUIRE(!chains.empty());
  CHECK(chains[0]["level"] == "request");
  CHECK(chains[0]["cause"] == "kv_cache_pressure");
  CHECK(!chains[0]["requests"].empty());
  // Stored by the trace: the tail's cause points at it by id.
  CHECK(chains[0]["id"] == (*k)["chain_id"]);
  CHECK(q_int(db, "SELECT count(*) FROM chains WHERE id = '" + chains[0]["id"].get<std::string>() + "'") == 1);
}

TEST_CASE("nccl_straggler: a late tensor-parallel rank stalls every stream's next token; the late rank is named") {
  need_aiohttp();
  TempDir dir;
  // Two TP workers with an all-reduce per forward pass on the fake libnccl; rank 1 starts
  // every 5th pass 60 ms late (decode passes are 20 ms): rank 0 waits for it in the barrier.
  PlantedServer srv(dir, 12000 + static_cast<int>(::getpid() % 8000),
                    late_rank_args());
  auto [db, d] = srv.traced({"--requests", "24", "--concurrency", "4", "--max-tokens", "10"},
                            {"--metric", "itl", "--slowest", "5"});
  // The communicator was formed inside the trace: its ncclCommInitRank gives the ranks.
  CHECK(q_int(db, "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = 'ncclCommInitRank'") == 2);
  const auto [late_pid, named, chain_id] = check_late_rank_named(db, d);
  const json* n = tail_cause(d, "nccl_straggler");
  // explain leads with the request chains (stored by the trace); the token-gap one is this
  // nccl_straggler, naming the late rank. (On a busy host the first request's TTFT, which
  // waited for the communicator to form, can be a request chain of its own, ranked by the
  // time it lost.)
  auto e = run_causeway({"explain", "--db", db, "--json", "--limit", "100"});
  REQUIRE(e.exit_code == 0);
  const json chains = json::parse(e.out)["chains"];
  REQUIRE(!chains.empty());
  CHECK(chains[0]["level"] == "request");
  const json* itl = nullptr;
  bool call_level_seen = false;
  for (const auto& c : chains) {
    if (c.value("level", "") != "request") call_level_seen = true;
    else CHECK_FALSE(call_level_seen);  // request-level chains first
    if (!itl && c.value("metric", "") == "itl") itl = &c;
  }
  REQUIRE(itl != nullptr);
  CAPTURE(itl->dump());
  CHECK((*itl)["cause"] == "nccl_straggler");
  CHECK((*itl)["severity"] == "HIGH");
  CHECK((*itl)["id"] == chain_id);
  CHECK((*itl)["culprit"]["pid"] == late_pid);
  CHECK((*itl)["culprit"]["rank"] == 1);
  CHECK(!(*itl)["requests"].empty());
  MESSAGE("nccl_straggler: " << (*n)["share_time"].get<double>() * 100 << "% of the ITL tail's time above the median ("
                              << d["tail"]["units"] << " gaps, threshold " << d["tail"]["threshold_ms"] << " ms, median gap "
                              << d["itl_ms"]["p50"] << " ms), " << named << " of the " << d["slowest"].size()
                              << " slowest requests carry it; request chain " << chain_id << " " << (*itl)["severity"]);
  CHECK(q_int(db, "SELECT count(*) FROM chains WHERE id = '" + chain_id + "'") == 1);
}

TEST_CASE("nccl_straggler: traced after the workers formed their communicator, the late rank is still named") {
  need_aiohttp();
  TempDir dir;
  PlantedServer srv(dir, 16000 + static_cast<int>(::getpid() % 8000),
                    late_rank_args());
  auto [db, d] = traced_after_init(srv, dir);
  // No init traced: the all-reduces carry each worker's own handle and no rank; the ranks come
  // from the launcher variables the workers were started with (RANK / WORLD_SIZE / MASTER_*).
  const std::string mine = workers_of(srv.pid);
  CHECK(q_int(db, "SELECT count(DISTINCT a1) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = 'ncclAllReduce' AND e." +
              mine) == 2);
  CHECK(q_int(db, "SELECT count(*) FROM processes WHERE comm LIKE 'VllmWorker-%' AND rank_source = 'RANK' AND world_size = 2 AND " +
              mine) == 2);
  LateWorker late;
  late.workers = mine;
  const auto [late_pid, named, chain_id] = check_late_rank_named(db, d, late);
  MESSAGE("nccl_straggler after init: " << (*tail_cause(d, "nccl_straggler"))["share_time"].get<double>() * 100
                                         << "% of the ITL tail's time above the median; " << named << " of the "
                                         << d["slowest"].size() << " slowest requests name pid " << late_pid
                                         << "; request chain " << chain_id);
}

TEST_CASE("nccl_straggler: vLLM multiproc-executor workers (no launcher variables) traced after init; the title names the rank") {
  need_aiohttp();
  need_setproctitle();
  TempDir dir;
  // --worker-launch mp: workers with no RANK / WORLD_SIZE, titled "VLLM::Worker_TP<rank>"
  // (comm "VLLM::Worker_TP", cut to 15 bytes) as vLLM V1's multiproc executor titles them.
  PlantedServer srv(dir, 20000 + static_cast<int>(::getpid() % 4000),
                    late_rank_args("mp"));
  auto [db, d] = traced_after_init(srv, dir);
  // Nothing from a launcher: the rank is only in the title.
  const std::string mine = " AND " + workers_of(srv.pid);
  CHECK(q_int(db, "SELECT count(*) FROM processes WHERE comm = 'VLLM::Worker_TP' AND rank IS NULL" + mine) == 2);
  CHECK(q_int(db, "SELECT count(*) FROM processes WHERE cmdline LIKE 'VLLM::Worker_TP_%'" + mine) == 2);
  const auto [late_pid, named, chain_id] = check_late_rank_named(
      db, d, {"cmdline LIKE 'VLLM::Worker_TP1%'", "VLLM::Worker_TP", "process_title", workers_of(srv.pid)}, 4);
  // The stored chain the tail's cause points at (the trace stored it for its own ITL tail)
  // names the worker the same way. (Other chains may blame rank 0 for the TTFT tail: on a
  // busy host a first request can wait for either rank.)
  auto e = run_causeway({"explain", "--db", db, "--json", "--limit", "100"});
  REQUIRE(e.exit_code == 0);
  CAPTURE(e.out);
  const json chains = json::parse(e.out)["chains"];
  auto stored = std::find_if(chains.begin(), chains.end(), [&](const json& c) { return c.value("id", "") == chain_id; });
  REQUIRE(stored != chains.end());
  CHECK((*stored)["cause"] == "nccl_straggler");
  CHECK((*stored)["culprit"]["pid"] == late_pid);
  CHECK((*stored)["culprit"]["rank"] == 1);
  CHECK((*stored)["culprit"]["rank_source"] == "process_title");
  MESSAGE("nccl_straggler, vLLM mp workers: " << (*tail_cause(d, "nccl_straggler"))["share_time"].get<double>() * 100
                                               << "% of the ITL tail's time above the median; " << named << " of the "
                                               << d["slowest"].size() << " slowest requests name pid " << late_pid
                                               << " (rank 1 from its title); request chain " << chain_id);
}

TEST_CASE("nccl_straggler: untitled vLLM multiproc-executor workers traced after init; the late pid is named, no rank") {
  need_aiohttp();
  TempDir dir;
  // --worker-launch mp-untitled: no launcher variable and no title (vLLM without setproctitle):
  // both workers are "python3" children of the engine core, grouped by that alone.
  PlantedServer srv(dir, 28000 + static_cast<int>(::getpid() % 4000),
                    late_rank_args("mp-untitled"));
  auto [db, d] = traced_after_init(srv, dir);
  CHECK(q_int(db, "SELECT count(*) FROM processes WHERE comm = 'python3' AND cmdline LIKE '%--tp-worker %' AND rank IS NULL AND " +
              workers_of(srv.pid)) == 2);
  const auto [late_pid, named, chain_id] =
      check_late_rank_named(db, d, {"cmdline LIKE '%--tp-worker 1,%'", "python3", "structural", workers_of(srv.pid)}, 4);
  MESSAGE("nccl_straggler, untitled mp workers: " << (*tail_cause(d, "nccl_straggler"))["share_time"].get<double>() * 100
                                                   << "% of the ITL tail's time above the median; " << named << " of the "
                                                   << d["slowest"].size() << " slowest requests name pid " << late_pid
                                                   << " (no rank: structural)");
}

TEST_CASE("network: a client that stops reading mid-stream; its token gaps name the connection's peer") {
  need_aiohttp();
  need_own_net();
  TempDir dir;
  // 8 KiB events, 30 a stream, each written once the previous one left (so each event's
  // write itself meets the full socket; aiohttp's own buffering of a stall into one write is
  // the case after this one); clients with a
  // 4 KiB receive buffer, every 4th request stops reading for 300 ms after its 3rd event:
  // the ~15 events made meanwhile (120 KB) overflow the socket's buffers (~24 KB), so the
  // server's writes to it meet a full send buffer.
  PlantedServer srv(dir, 12000 + static_cast<int>(::getpid() % 8000), {"--event-bytes", "8192", "--flush-each-event"},
                    true);
  // Warm the server up first: its first requests pay for imports, every stream at once.
  REQUIRE(run_process({"nsenter", "--net=/proc/" + std::to_string(srv.pid) + "/ns/net", kPython,
                       source_dir() + "/tests/testprogs/inference_client.py", "--port", std::to_string(srv.port),
                       "--requests", "4", "--concurrency", "4", "--max-tokens", "5", "--out", dir.file("warm.json")})
              .exit_code == 0);
  auto [db, d] = srv.traced({"--requests", "16", "--concurrency", "4", "--max-tokens", "30", "--rcvbuf", "4096",
                             "--stall-every", "4", "--stall-ms", "300", "--stall-after", "3"},
                            {"--metric", "itl", "--slowest", "8"});
  CAPTURE(d.dump());
  CHECK(d["count"] == 16);
  CHECK(q_int(db, "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = 'sock_send_wait' AND "
                  "e.dur_ns > 100000000") >= 4);
  const json* n = tail_cause(d, "network");
  REQUIRE(n != nullptr);
  CHECK((*n)["share_time"].get<double>() >= 0.5);
  const json& k = (*n)["culprit"];
  CHECK(k["pid"] == srv.pid);
  CHECK(k["peer"].get<std::string>().rfind("127.0.0.1:", 0) == 0);
  CHECK(k["short_writes"].get<int64_t>() + k["eagain"].get<int64_t>() >= 1);
  CHECK(k["retransmits"].get<int64_t>() >= 0);  // a receive buffer this small may drop segments
  // It names the stalled requests (req-NNNN-w, NNNN % 4 == 3), the slowest first, each with
  // the peer of its own connection. (The others' clients read through a 4 KiB buffer too, on
  // a busy host: their writes may wait a little on the socket as well.)
  size_t stalled = 0;
  for (const auto& s : d["slowest"])
    for (const auto& c : s["causes"]) {
      if (c["cause"] != "network") continue;
      const std::string id = s["request_id"].get<std::string>();
      stalled += std::stoi(id.substr(4, 4)) % 4 == 3;
      CHECK(c["culprit"]["peer"] == q_text(db, "SELECT peer FROM requests WHERE request_id = '" + id + "'"));
    }
  CHECK(stalled >= 3);
  CHECK(std::stoi(d["slowest"][0]["request_id"].get<std::string>().substr(4, 4)) % 4 == 3);
  CHECK(d["slowest"][0]["causes"][0]["cause"] == "network");
  // explain leads with the request chain, naming the peer.
  const json chains = explain_chains(db);
  REQUIRE(!chains.empty());
  CHECK(chains[0]["cause"] == "network");
  CHECK(chains[0]["summary"].get<std::string>().find("127.0.0.1:") != std::string::npos);
}

TEST_CASE("a stalled stream flushed in one large write: every chunk header read, exact tokens and ITL, no desync") {
  need_aiohttp();
  need_own_net();
  TempDir dir;
  // 4 KiB events, 30 a stream, written as aiohttp writes them (no flush per event), on a
  // loopback of MTU 1500 in the server's own network namespace: clients with a 4 KiB
  // receive buffer, every 4th stops reading for 300 ms after its 3rd event, so
  // the socket fills and aiohttp keeps the events made meanwhile, then sends them in one
  // write of several chunks, each chunk-size line 4 KiB or more past the write's start
  // (beyond one record's copy: bpf/sock.bpf.h copies it in pieces; docs/INFERENCE.md
  // "Capture limits").
  PlantedServer srv(dir, 20000 + static_cast<int>(::getpid() % 8000), {"--event-bytes", "4096"}, true);
  REQUIRE(run_process({"nsenter", "--net=/proc/" + std::to_string(srv.pid) + "/ns/net", kPython, source_dir() + "/tests/testprogs/inference_client.py", "--port", std::to_string(srv.port),
                       "--requests", "4", "--concurrency", "4", "--max-tokens", "5", "--out", dir.file("warm.json")})
              .exit_code == 0);
  auto [db, d] = srv.traced({"--requests", "16", "--concurrency", "4", "--max-tokens", "30", "--rcvbuf", "4096",
                             "--stall-every", "4", "--stall-ms", "300", "--stall-after", "3"},
                            {"--metric", "itl"});
  // Only this server's completions count: on a shared host another job's fake-CUDA server
  // is traced too (its process tree holds a CUDA process), and so may be a scrape.
  const std::string mine = "server_pid = " + std::to_string(srv.pid) + " AND path = '/v1/completions'";
  CHECK(q_int(db, "SELECT value FROM collector_stats WHERE name = 'http_desync'") == 0);
  CHECK(q_int(db, "SELECT value FROM collector_stats WHERE name = 'http_sse_unseen'") == 0);
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE " + mine) == 16);
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE " + mine + " AND (status != 200 OR complete != 1 OR events != 30)") == 0);
  MESSAGE(d["count"] << " requests stored");
  const auto client = client_results(dir.file("client.json"));
  const auto traced = traced_results(db, srv.pid);
  REQUIRE(client.size() == 16);
  size_t flushed = 0;
  for (const auto& [id, m] : client) {
    CAPTURE(id);
    auto it = traced.find(id);
    REQUIRE(it != traced.end());
    const Measured& k = it->second;
    REQUIRE(k.gaps_ns.size() == m.gaps_ns.size());
    // Several events in one write are tokens at one time: a gap of 0 after an event of 4 KiB
    // means the next chunk's header lay past the first KiB of that write.
    const auto zeros = std::count(k.gaps_ns.begin(), k.gaps_ns.end(), 0);
    const bool stalled = std::stoi(id.substr(4, 4)) % 4 == 3;
    if (stalled && zeros >= 2) ++flushed;
    // The stream's span (first to last token) as the client saw it, within 10% (or 20 ms on
    // this busy host); the longest gap no longer than the client's (the server cannot have
    // written later than the client read), and for a stalled stream most of the stall.
    int64_t span_k = 0, span_m = 0;
    for (int64_t g : k.gaps_ns) span_k += g;
    for (int64_t g : m.gaps_ns) span_m += g;
    CHECK(std::abs(static_cast<double>(span_k - span_m)) <= std::max(20e6, 0.1 * static_cast<double>(span_m)));
    const int64_t max_k = *std::max_element(k.gaps_ns.begin(), k.gaps_ns.end());
    const int64_t max_m = *std::max_element(m.gaps_ns.begin(), m.gaps_ns.end());
    CHECK(max_k <= max_m + 20'000'000);
    if (stalled) CHECK(max_k >= 100'000'000);
  }
  MESSAGE(flushed << " of 4 stalled streams had a write of 3 or more 4 KiB events");
  CHECK(flushed >= 3);
}

TEST_CASE("events flushed with one sendmsg of 8 iovecs of 5 KiB: each iovec copied in pieces, every token counted") {
  TempDir dir;
  const int port = 28000 + static_cast<int>(::getpid() % 4000);
  // 8 iovecs, each 4 chunks of a ~1.2 KiB event: 32 events in one syscall of ~40 KiB, most
  // chunk-size lines past the first KiB of their iovec.
  pid_t server = spawn({kPython, source_dir() + "/tests/testprogs/sse_sendmsg_server.py", "--port", std::to_string(port),
                        "--ready-file", dir.file("server.ready")},
                       dir.file("server.log"));
  const Reap reap{server};
  wait_for_file(dir.file("server.ready"), 30000);
  Tracer t(dir, {"--http-port", std::to_string(port), "--no-stack", "--engine-metrics-interval", "0"});
  auto c = run_process({kPython, source_dir() + "/tests/testprogs/inference_client.py", "--port", std::to_string(port),
                        "--requests", "12", "--concurrency", "3", "--out", dir.file("client.json")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  CAPTURE(t.log());
  // This server's only (another job's fake-CUDA server may be traced on a shared host).
  const std::string mine = "server_pid = " + std::to_string(server);
  CHECK(q_int(t.db(), "SELECT count(*) FROM requests WHERE " + mine) == 12);
  CHECK(q_int(t.db(), "SELECT count(*) FROM requests WHERE " + mine + " AND (status != 200 OR complete != 1 OR events != 32)") == 0);
  CHECK(q_int(t.db(), "SELECT value FROM collector_stats WHERE name = 'http_desync'") == 0);
  CHECK(q_int(t.db(), "SELECT value FROM collector_stats WHERE name = 'http_sse_unseen'") == 0);
}

TEST_CASE("the tracer's own /metrics scraped during a request trace is never a request, its port given as --http-port too") {
  // causeway's own pid is never a traced server (collector/servers.h listeners_of), so its
  // Prometheus endpoint's scrapes never reach the request capture, not even when a user
  // names its port with --http-port: accept, reads, writes and arrival times are all keyed by
  // a server the collector chose. A plain Python server (no CUDA in its tree, so no other
  // host-wide trace on a shared host takes it as a server) is traced beside it.
  TempDir dir;
  // Below the ephemeral range (32768 up): a client socket of another process cannot hold them.
  const int port = 24000 + static_cast<int>(::getpid() % 4000), metrics_port = port - 4000;
  pid_t server = spawn({kPython, source_dir() + "/tests/testprogs/sse_sendmsg_server.py", "--port", std::to_string(port),
                        "--ready-file", dir.file("server.ready")},
                       dir.file("server.log"));
  const Reap reap{server};
  wait_for_file(dir.file("server.ready"), 30000);
  const std::string metrics_addr = "127.0.0.1:" + std::to_string(metrics_port);
  Tracer t(dir, {"--http-port", std::to_string(port), "--http-port", std::to_string(metrics_port), "--metrics", metrics_addr,
                 "--no-stack", "--engine-metrics-interval", "0"});
  const pid_t tracer = t.pid();
  // 20 scrapes of the tracer's /metrics, 50 ms apart, while the client's 12 requests run.
  const char* scrape = R"(import sys, time, urllib.request
ok = 0
for _ in range(int(sys.argv[3])):
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        ok += r.status == 200 and b"causeway_calls_total" in r.read()
    time.sleep(0.05)
open(sys.argv[2], "w").write(str(ok))
)";
  Child scraper(spawn({kPython, "-c", scrape, "http://" + metrics_addr + "/metrics", dir.file("scraped"), "20"},
                      dir.file("scraper.log")));
  auto c = run_process({kPython, source_dir() + "/tests/testprogs/inference_client.py", "--port", std::to_string(port),
                        "--requests", "12", "--concurrency", "3", "--out", dir.file("client.json")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  REQUIRE(scraper.wait() == 0);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  CAPTURE(t.log());
  std::ifstream scraped(dir.file("scraped"));
  int ok = 0;
  scraped >> ok;
  CHECK(ok == 20);  // every scrape answered while the requests were traced
  const std::string db = t.db();
  CHECK(q_int(db, "SELECT value FROM collector_stats WHERE name = 'tracer_pid'") == tracer);
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE server_pid = " + std::to_string(tracer)) == 0);
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE path = '/metrics'") == 0);
  // The users' requests are all there, exactly, and nothing else on the two ports.
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE server_pid IN (" + std::to_string(server) + ", " + std::to_string(tracer) +
                      ")") == 12);
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE server_pid = " + std::to_string(server) +
                      " AND (path != '/v1/completions' OR status != 200 OR complete != 1 OR events != 32)") == 0);
}
