#include "tests/bpf/requests_stacks_support.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <tuple>

#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::test::stacks {

using json = nlohmann::json;

std::string servers_dir() { return source_dir() + "/tests/servers"; }

void need(bool ok, const char* why) {
  if (ok) return;
  std::printf("SKIPPED: %s\n", why);
  std::exit(77);
}

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

std::string node_with(const std::string& module) {
  const std::string node = on_path("node");
  need(!node.empty(), "node is not installed (scripts/install-deps.sh --tests)");
  const std::string why = module + " is not installed (cd tests/servers && npm ci)";
  need(::access((servers_dir() + "/node_modules/" + module).c_str(), F_OK) == 0, why.c_str());
  return node;
}

int test_port(int k) { return 20000 + static_cast<int>(::getpid() % 9000) * 4 + k; }

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

std::map<std::string, std::string> stored(const std::string& db, pid_t server, const std::string& path) {
  std::map<std::string, std::string> out;
  auto h = open_read_only(db);
  REQUIRE(h);
  std::string sql = "SELECT request_id, peer FROM requests WHERE server_pid = " + std::to_string(server);
  if (!path.empty()) sql += " AND path = '" + path + "'";
  auto st = Statement::prepare(h->get(), sql);
  REQUIRE(st);
  while (st->step() == SQLITE_ROW) out[st->col_text(0)] = st->col_text(1);
  return out;
}

int64_t stat_of(const std::string& db, const std::string& name) {
  return q_int(db, "SELECT coalesce(max(value), 0) FROM collector_stats WHERE name = '" + name + "'");
}

Server::Server(const std::vector<std::string>& argv, const TempDir& dir) : pid(spawn(argv, dir.file("server.log"))) {
  wait_for_file(dir.file("server.ready"), 30000);
}

Server::~Server() {
  ::kill(pid, SIGTERM);
  wait_exit(pid);
}

void run_client(const TempDir& dir, int port, int connections, int rounds, const std::string& path, const std::string& out,
                const std::string& prefix) {
  std::vector<std::string> argv{kPython, servers_dir() + "/burst_client.py", "--port", std::to_string(port), "--connections",
                                std::to_string(connections), "--rounds", std::to_string(rounds), "--path", path,
                                "--prefix", prefix, "--out", dir.file(out)};
  auto c = run_process(argv);
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
}

std::map<std::string, int> run_openai_client(const TempDir& dir, int port, int requests, bool tls) {
  std::vector<std::string> argv{node_with("openai"), servers_dir() + "/openai_client.js", "--port", std::to_string(port),
                                "--requests", std::to_string(requests), "--concurrency", "4", "--out", dir.file("sdk.json")};
  std::vector<std::string> env;
  if (tls) {
    argv.push_back("--tls");
    env.push_back("NODE_EXTRA_CA_CERTS=" + dir.file("cert.pem"));
  }
  auto c = run_process(argv, env);
  REQUIRE_MESSAGE(c.exit_code == 0, c.err << read_file(dir.file("sdk.json")));
  std::map<std::string, int> chunks;
  std::ifstream f(dir.file("sdk.json"));
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) {
      const json j = json::parse(line);
      chunks[j["request_id"].get<std::string>()] = j["chunks"].get<int>();
    }
  return chunks;
}

void check_trace(const std::string& db, const std::string& log, pid_t server, const ClientRun& sent, size_t expected,
                 const std::string& path, size_t other) {
  CAPTURE(log);
  CHECK(sent.not_ok == 0);
  REQUIRE(sent.peer_of.size() == expected);
  CHECK(stat_of(db, "dropped_ring_sock") == 0);
  CHECK(stat_of(db, "dropped_sock_queue") == 0);
  CHECK(stat_of(db, "dropped_sock_map") == 0);
  const auto got = stored(db, server, path);
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
  // The scraper ran (its samples are stored) and none of its requests is a user's. Only this
  // server is traced, so every scrape connection was made to it: each is either counted as
  // excluded (the server accepted it) or as unaccepted (a SYN dropped by a full backlog, a
  // connection still queued at the stop), exactly.
  CHECK(stat_of(db, "engine_scrapes") >= 1);
  CHECK(stored(db, server, "/metrics").empty());
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE server_pid = " + std::to_string(server) + " AND path != '" + path +
                      "'") == static_cast<int64_t>(other));
  CHECK(stat_of(db, "http_own_scrapes_excluded") >= 1);
  CHECK(stat_of(db, "http_own_scrapes_excluded") + stat_of(db, "engine_scrape_unaccepted") ==
        stat_of(db, "engine_scrape_connections"));
  MESSAGE("stored " << got.size() << " requests; socket records " << stat_of(db, "sock_records_received")
                    << ", lost in the ring " << stat_of(db, "dropped_ring_sock") << ", in the queue "
                    << stat_of(db, "dropped_sock_queue") << "; scrapes " << stat_of(db, "engine_scrape_connections")
                    << ", excluded " << stat_of(db, "http_own_scrapes_excluded") << ", unaccepted "
                    << stat_of(db, "engine_scrape_unaccepted"));
  // Scheduled like a CUDA process: its context switches are recorded, and it has its row.
  CHECK(q_int(db, "SELECT count(*) FROM sched WHERE prev_pid = " + std::to_string(server) + " OR next_pid = " +
                      std::to_string(server)) > 0);
  CHECK(q_int(db, "SELECT count(*) FROM processes WHERE pid = " + std::to_string(server) + " AND comm != '' AND cmdline != ''") == 1);
}

void check_errors(const std::string& db, pid_t server, const std::string& errors_json) {
  std::map<std::string, int> want_status;
  std::map<std::string, std::string> want_end;  // request_id → end_reason
  std::ifstream f(errors_json);
  std::string line;
  while (std::getline(f, line)) {
    const json j = json::parse(line);
    const std::string kind = j["kind"];
    want_status[j["request_id"]] = j["status"].get<int>();
    want_end[j["request_id"]] = kind == "error" ? "complete" : kind;
  }
  REQUIRE(want_end.size() == 8);
  for (const auto& [id, end] : want_end) {
    CAPTURE(id);
    CHECK(q_text(db, "SELECT coalesce(max(end_reason), 'none') FROM requests WHERE server_pid = " + std::to_string(server) +
                         " AND request_id = '" + id + "'") == end);
    CHECK(q_int(db, "SELECT coalesce(max(status), -1) FROM requests WHERE server_pid = " + std::to_string(server) +
                        " AND request_id = '" + id + "'") == want_status[id]);
  }
  const json doc = requests_json(db, {"--pid", std::to_string(server), "--tenant", "tenant-errors", "--slowest", "0"});
  const json& r = doc["requests"];
  CAPTURE(r.dump());
  CHECK(r["count"] == 8);
  CHECK(r["errors"] == 4);
  CHECK(r["aborted"] == 2);
  CHECK(r["disconnected"] == 2);
  std::map<std::string, std::tuple<int, int, int>> by_path;  // errors, aborted, disconnected
  for (const json& b : r["by"]) {
    CHECK(b["tenant"] == "tenant-errors");
    by_path[b["path"]] = {b["errors"].get<int>(), b["aborted"].get<int>(), b["disconnected"].get<int>()};
  }
  CHECK(by_path["/missing"] == std::tuple{2, 0, 0});
  CHECK(by_path["/boom"] == std::tuple{2, 0, 0});
  CHECK(by_path["/abort"] == std::tuple{0, 2, 0});
  CHECK(by_path["/slow-stream"] == std::tuple{0, 0, 2});
  // The other tenant's requests all went well.
  const json all = requests_json(db, {"--pid", std::to_string(server), "--slowest", "0"});
  CHECK(all["requests"]["errors"] == 4);
  CHECK(all["requests"]["aborted"] == 2);
  CHECK(all["requests"]["disconnected"] == 2);
}

void errors_case(const TempDir& dir, pid_t server, int port) {
  Tracer t(dir, {"--pid", std::to_string(server), "--no-stack"});
  run_client(dir, port, 20, 1);  // ordinary requests from another tenant (the client's address)
  auto c = run_process({kPython, servers_dir() + "/errors_client.py", "--port", std::to_string(port), "--tenant",
                        "tenant-errors", "--each", "2", "--out", dir.file("errors.json")});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  sleep_ms(800);
  REQUIRE(t.stop(SIGINT) == 0);
  CAPTURE(t.log());
  check_errors(t.db(), server, dir.file("errors.json"));
}

// The SDK's requests as stored: each once, streamed, with as many content events as the SDK
// handed over chunks.
void check_sdk_requests(const std::string& db, pid_t server, const std::map<std::string, int>& sdk) {
  const auto got = stored(db, server, "/v1/chat/completions");
  CHECK(got.size() == sdk.size());
  size_t same_events = 0;
  for (const auto& [id, chunks] : sdk) {
    REQUIRE(chunks == 5);
    if (q_int(db, "SELECT count(*) FROM requests WHERE server_pid = " + std::to_string(server) + " AND request_id = '" + id +
                      "' AND streamed = 1 AND status = 200 AND content_events = " + std::to_string(chunks) +
                      " AND peer LIKE '127.0.0.1:%'") == 1)
      ++same_events;
  }
  CHECK(same_events == sdk.size());
  // Each stream ends as the SDK saw it end: complete. Node writes a stream's last event, [DONE]
  // and the terminating chunk in one writev of 9 iovecs; past the iovecs the probe copies, the
  // terminator was unseen and every stream ended `lost` (http_desync one per stream).
  CHECK(q_int(db, "SELECT count(*) FROM requests WHERE server_pid = " + std::to_string(server) +
                      " AND path = '/v1/chat/completions' AND end_reason = 'complete' AND complete = 1") ==
        static_cast<int64_t>(sdk.size()));
  CHECK(stat_of(db, "http_desync") == 0);
}

void bursts_and_sdk_case(const TempDir& dir, pid_t server, int port, const std::vector<std::string>& find_by) {
  std::vector<std::string> args = find_by;
  args.insert(args.end(), {"--no-stack", "--engine-metrics-interval", "200ms"});
  Tracer t(dir, args);
  sleep_ms(600);  // a --http-port port is scraped from the start; a --pid one from its first request
  run_client(dir, port, 300, 1);
  const auto sdk = run_openai_client(dir, port, 40);
  sleep_ms(800);
  REQUIRE(t.stop(SIGINT) == 0);
  check_trace(t.db(), t.log(), server, client_results(dir.file("client.json")), 300, "/hello", sdk.size());
  check_sdk_requests(t.db(), server, sdk);
}

void bursts_case(const TempDir& dir, pid_t server, int port, const std::vector<std::string>& find_by, int connections,
                 int rounds) {
  std::vector<std::string> args = find_by;
  args.insert(args.end(), {"--no-stack", "--engine-metrics-interval", "200ms"});
  Tracer t(dir, args);
  sleep_ms(600);  // a --http-port port is scraped from the start; a --pid one from its first request
  run_client(dir, port, connections, rounds);
  sleep_ms(800);
  REQUIRE(t.stop(SIGINT) == 0);
  check_trace(t.db(), t.log(), server, client_results(dir.file("client.json")), static_cast<size_t>(connections * rounds));
}

namespace {

// A busy loop named hog_spin on `cpu`. Its own session, with the autogroup's nice at -10: the
// kernel shares a CPU between sessions' autogroups before nice counts inside one, and this
// host runs other jobs, each its own session; so the hog holds the CPU more than any one of
// them (as a batch job given priority would). At -6 (weight 3,906 against 1,024 a session)
// a compiler or two of other builds on that CPU during the calm half slowed a calm request
// more than the hog slowed some of its own (node: 2 of the 5 slowest calm, cc1plus their
// culprit); at -10 (9,548) the hog leaves the server about a tenth of the CPU.
pid_t start_hog(const TempDir& dir, int cpu) {
  return spawn({kPython, "-c",
                "import ctypes, os, sys\nos.setsid()\nopen('/proc/self/autogroup', 'w').write('-10')\n"
                "os.sched_setaffinity(0, {int(sys.argv[1])})\nctypes.CDLL(None).prctl(15, b'hog_spin', 0, 0, 0)\n"
                "while True: pass",
                std::to_string(cpu)},
               dir.file("hog.log"));
}

// The request ids (of `path`) a stored request chain of `cause` names, over every chain of
// `explain --json --pid server`; fails on a chain whose culprit is the tracer.
std::vector<std::string> chain_requests(const std::string& db, pid_t server, int64_t tracer, const std::string& cause,
                                        int64_t* culprit) {
  auto r = run_causeway({"explain", "--db", db, "--json", "--limit", "100", "--pid", std::to_string(server)});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const json doc = json::parse(r.out);
  std::vector<std::string> ids;
  for (const json& ch : doc["chains"]) {
    if (ch.contains("culprit") && ch["culprit"].is_object()) CHECK(ch["culprit"].value("pid", int64_t{0}) != tracer);
    if (ch.value("level", "") != "request" || ch.value("cause", "") != cause) continue;
    *culprit = ch["culprit"].value("pid", int64_t{0});
    for (const json& id : ch["requests"]) ids.push_back(id);
  }
  return ids;
}

}  // namespace

void hog_case(const TempDir& dir, pid_t server, int port, const std::vector<std::string>& find_by) {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  need(cpus >= 2, "needs 2 CPUs (the server and the hog share one)");
  const int cpu = static_cast<int>(cpus) - 1;
  REQUIRE(run_process({"taskset", "-a", "-p", "-c", std::to_string(cpu), std::to_string(server)}).exit_code == 0);
  std::vector<std::string> args = find_by;
  args.insert(args.end(), {"--no-stack", "--engine-metrics-interval", "0"});
  // Warm (a JIT's first compile of the route is slow on its own), then traced.
  run_client(dir, port, 1, 3, "/spin?ms=20", "warm.json", "warm");
  Tracer t(dir, args);
  sleep_ms(600);  // the server found and its threads traced before the first request
  run_client(dir, port, 1, 15, "/spin?ms=20", "calm.json", "calm");
  Child hog{start_hog(dir, cpu)};
  sleep_ms(300);
  run_client(dir, port, 1, 15, "/spin?ms=20", "hogged.json", "hogged");
  ::kill(hog.pid(), SIGKILL);
  hog.wait();
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  CAPTURE(t.log());
  const std::string& db = t.db();
  const int64_t tracer = stat_of(db, "tracer_pid");
  CHECK(tracer > 0);
  CHECK(client_results(dir.file("calm.json")).peer_of.size() == 15);
  CHECK(client_results(dir.file("hogged.json")).peer_of.size() == 15);
  // The requests the hog slowed: the slowest are all its, and the cpu_contention of the
  // slower half (this busy host slows the calm ones too, by less) names it.
  const json doc = requests_json(
      db, {"--pid", std::to_string(server), "--path", "/spin", "--metric", "e2e", "--quantile", "0.5", "--slowest", "5"});
  const json& r = doc["requests"];
  CAPTURE(r.dump());
  CHECK(r["count"] == 30);
  // The slowest are the hog's, each with the hog as its own cpu_contention culprit (a calm
  // one may be among them on this busy host, slowed by another job).
  int hogged = 0, named = 0;
  for (const json& s : r["slowest"]) {
    if (s["request_id"].get<std::string>().rfind("hogged", 0) != 0) continue;
    ++hogged;
    for (const json& c : s["causes"])
      if (c["cause"] == "cpu_contention" && c["culprit"].value("pid", int64_t{0}) == hog.pid()) ++named;
  }
  CHECK(hogged >= 4);
  CHECK(named >= 3);
  MESSAGE("of the 5 slowest, " << hogged << " from the hog's half, " << named << " naming the hog");
  const json* cc = nullptr;
  for (const json& c : r["tail"]["causes"]) {
    if (c["culprit"].is_object() && c["culprit"].contains("pid")) CHECK(c["culprit"]["pid"] != tracer);
    if (c["cause"] == "cpu_contention") cc = &c;
  }
  REQUIRE(cc != nullptr);
  CHECK((*cc)["culprit"]["pid"] == hog.pid());
  CHECK((*cc)["culprit"]["comm"] == "hog_spin");
  MESSAGE("cpu_contention: share " << (*cc)["share_time"] << ", culprit " << (*cc)["culprit"].dump());
  // The stored request chain (explain: the p99 tail, here the slowest request or two) names
  // the hog too when the requests it explains are the hog's.
  int64_t chain_culprit = 0;
  const auto ids = chain_requests(db, server, tracer, "cpu_contention", &chain_culprit);
  REQUIRE_FALSE(ids.empty());
  const bool hogs_only = std::all_of(ids.begin(), ids.end(), [](const std::string& id) { return id.rfind("hogged", 0) == 0; });
  MESSAGE("cpu_contention chain: " << ids.size() << " request(s), " << std::string(hogs_only ? "all the hog's" : "not all the hog's")
                                   << ", culprit pid " << chain_culprit);
  if (hogs_only) CHECK(chain_culprit == hog.pid());
}

json requests_json(const std::string& db, const std::vector<std::string>& more) {
  std::vector<std::string> args{"requests", "--db", db, "--json"};
  args.insert(args.end(), more.begin(), more.end());
  auto r = run_causeway(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace causeway::test::stacks
