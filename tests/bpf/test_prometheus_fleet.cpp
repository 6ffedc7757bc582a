// Two traced "hosts" scraped by a real Prometheus (docs/FLEET.md "Prometheus"). Each tracer
// runs in its own UTS namespace (hostnames cw-prom-a, cw-prom-b) with --metrics on a loopback
// port and --pid of one cw_workload on the fake libcudart; Debian's prometheus scrapes both
// every second with examples/prometheus/causeway.rules.yml loaded. Through its HTTP API, at a
// moment after a scrape that saw the workloads' last calls and before the tracers stop:
//   - calls per (host, source, op) equal `causeway stats --json` of that host's DB, exactly;
//   - every duration bucket equals the DB's durations binned at the same bounds, exactly;
//   - histogram_quantile(0.99) lies in the bucket that holds stats' p99 (the tolerance: see
//     p99_within_bucket);
//   - the recording rules name both hosts.
// The examples pass `promtool check config`, `check rules` and `test rules`.
#include <doctest/doctest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "tests/bpf/collector_harness.h"
#include "tests/bpf/prometheus_server.h"

namespace causeway::test {
namespace {

using json = nlohmann::json;
using OpKey = std::pair<std::string, std::string>;  // (source, op)

// docs/METRICS.md buckets, upper bounds in seconds (the exposition prints them as le).
constexpr double kBounds[] = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                              5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,  0.25, 0.5,  1.0,  2.5,  5.0,  10.0};

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string examples(const std::string& name) { return source_dir() + "/examples/prometheus/" + name; }

ProcessResult promtool(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/promtool"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

// The per-call families of a scrape (what Prometheus compares), "" when it fails.
std::string call_series(int port) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(2);
  auto r = cli.Get("/metrics");
  if (!r || r->status != 200) return "";
  std::string out, line;
  for (size_t pos = 0, nl; pos < r->body.size(); pos = nl + 1) {
    nl = r->body.find('\n', pos);
    if (nl == std::string::npos) nl = r->body.size();
    line = r->body.substr(pos, nl - pos);
    if (line.rfind("causeway_call", 0) == 0) out += line + "\n";
  }
  return out;
}

double value_of(const json& sample) { return std::stod(sample["value"][1].get<std::string>()); }

// The traced process's CUDA calls per op and their p99, as `causeway stats --json --pid`
// reports them from that host's DB.
struct HostStats {
  std::string hostname, boot_id;
  std::map<OpKey, uint64_t> calls;
  std::map<OpKey, double> p99_s;
};

HostStats host_stats(const std::string& db, pid_t pid) {
  auto r = run_causeway({"stats", "--json", "--db", db, "--pid", std::to_string(pid)});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json doc = json::parse(r.out);
  HostStats h;
  h.hostname = doc["system"].value("hostname", "");
  h.boot_id = doc["system"].value("boot_id", "");
  for (const json& o : doc["ops"]) {
    const OpKey k{o.value("source", ""), o.value("op", "")};
    // Only its CUDA calls: the process's own block I/O (a page read back under a busy host's
    // memory pressure) is in stats --pid, while the endpoint exports block_rq host-wide only.
    if (k.first != "cuda") continue;
    REQUIRE(h.calls.count(k) == 0);  // one process: one entry per op
    h.calls[k] = o.value("count", uint64_t{0});
    h.p99_s[k] = o.value("p99_us", 0.0) * 1e-6;
  }
  return h;
}

// histogram_quantile interpolates linearly inside the first bucket whose cumulative count
// reaches rank 0.99·n, so its estimate and the exact nearest-rank p99 (the ceil(0.99·n)-th
// value) lie in the same bucket (lower, upper]. stats' p99 is that value to within 0.4 %
// (the midpoint of its log-linear bucket, tracedb/histogram.h). So the tolerance is the width
// of the Prometheus bucket holding the estimate, widened by 0.5 % at each end: e.g. a p99 of
// 1.2 ms may read anywhere in (1 ms, 2.5 ms]. No bound is tighter without finer buckets.
void p99_within_bucket(double prom_p99, double stats_p99) {
  double lower = 0, upper = kBounds[std::size(kBounds) - 1];
  for (double b : kBounds) {
    if (prom_p99 <= b) {
      upper = b;
      break;
    }
    lower = b;
  }
  CAPTURE(lower);
  CAPTURE(upper);
  CHECK(stats_p99 >= lower * 0.995);
  CHECK(stats_p99 <= upper * 1.005);
}

struct Host {
  std::string name;
  int port;
  std::vector<std::string> workload;  // cw_workload's options
  pid_t pid = -1;
  std::unique_ptr<Child> workload_process;
};

std::string instance(const Host& h) { return "127.0.0.1:" + std::to_string(h.port); }

}  // namespace

TEST_CASE("Prometheus scraping two tracers agrees with each host's stats") {
  if (const std::string why = prometheus_missing(); !why.empty()) {
    std::printf("SKIPPED: %s\n", why.c_str());
    std::exit(77);
  }
  if (::system("/usr/bin/unshare --uts true >/dev/null 2>&1") != 0) {
    std::printf("SKIPPED: unshare --uts is not available (two hosts need two UTS namespaces)\n");
    std::exit(77);
  }
  TempDir dir;

  // The shipped examples: valid, and the rules compute what their unit test says.
  for (const auto& args : std::vector<std::vector<std::string>>{{"check", "config", examples("prometheus.yml")},
                                                                {"check", "rules", examples("causeway.rules.yml")},
                                                                {"test", "rules", examples("causeway.rules.test.yml")}}) {
    const ProcessResult r = promtool(args);
    INFO(args[0] << " " << args[1] << ": " << r.out << r.err);
    CHECK(r.exit_code == 0);
  }
  {  // ...and promtool does reject a broken rule, so the checks above can fail.
    std::string rules = read_file(examples("causeway.rules.yml"));
    rules.replace(rules.find("histogram_quantile(0.99,"), 24, "histogram_quantile(0.99 ");
    std::ofstream(dir.file("broken.rules.yml")) << rules;
    CHECK(promtool({"check", "rules", dir.file("broken.rules.yml")}).exit_code != 0);
  }

  // Host a: 2.5 % of iterations slow (2 ms), so its p99 is in the slow tail; host b: 0.2 %
  // slow, so its p99 is in the ordinary ~200 µs calls. Paced (--rate) to run ~3-4 s: several
  // scrapes see the counters grow, which the rate() rules need.
  const int iters_a = 3000, iters_b = 2000;
  Host hosts[2] = {
      {"cw-prom-a", free_loopback_port(),
       {"--ops", "launch,stream_sync", "--iterations", std::to_string(iters_a), "--latency-us", "50", "--slow-every",
        "40", "--slow-us", "2000", "--rate", "2000"}},
      {"cw-prom-b", 0,
       {"--ops", "memcpy,stream_sync", "--iterations", std::to_string(iters_b), "--latency-us", "200", "--slow-every",
        "500", "--slow-us", "5000", "--rate", "1000"}}};
  do hosts[1].port = free_loopback_port();
  while (hosts[1].port == hosts[0].port);

  const std::string targets =
      "\"127.0.0.1:" + std::to_string(hosts[0].port) + "\", \"127.0.0.1:" + std::to_string(hosts[1].port) + "\"";
  PrometheusServer prom(dir, "global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}\n"
                             "rule_files: [\"" + examples("causeway.rules.yml") + "\"]\n"
                             "scrape_configs:\n"
                             "  - job_name: causeway\n"
                             "    static_configs: [{targets: [" + targets + "]}]\n");

  const std::string go = dir.file("go");
  for (Host& h : hosts) {
    std::vector<std::string> argv{testprog("cw_workload"), "--threads", "1", "--ready-file", dir.file(h.name + ".up"),
                                  "--wait-file", go};
    argv.insert(argv.end(), h.workload.begin(), h.workload.end());
    h.workload_process = std::make_unique<Child>(spawn(argv, dir.file(h.name + ".workload.log")));
    h.pid = h.workload_process->pid();
  }
  for (const Host& h : hosts) wait_for_file(dir.file(h.name + ".up"));
  Tracer ta(dir,
            {"--lib", testprog("libcudart.so.13"), "--no-stack", "--metrics", "127.0.0.1:" + std::to_string(hosts[0].port),
             "--pid", std::to_string(hosts[0].pid)},
            hosts[0].name, hosts[0].name);
  Tracer tb(dir,
            {"--lib", testprog("libcudart.so.13"), "--no-stack", "--metrics", "127.0.0.1:" + std::to_string(hosts[1].port),
             "--pid", std::to_string(hosts[1].pid)},
            hosts[1].name, hosts[1].name);
  Tracer* tracers[2] = {&ta, &tb};

  // Both targets up before the work starts.
  for (int waited = 0; prom.query("up{job=\"causeway\"} == 1").size() < 2; waited += 250) {
    INFO(prom.log());
    REQUIRE(waited < 60000);
    sleep_ms(250);
  }
  touch(go);
  for (Host& h : hosts) {
    INFO(read_file(dir.file(h.name + ".workload.log")));
    REQUIRE(h.workload_process->wait() == 0);
  }

  // Scrape timing. The endpoint lives only as long as the trace, so the last scrape must come
  // after the drain loop took the workloads' last calls off the ring, and before the stop:
  // wait until each endpoint's call series stop changing (2 equal reads 500 ms apart), then
  // until Prometheus holds a scrape of both taken after that, and evaluate every query at
  // that moment (t_eval): later, failed scrapes of the stopped tracers mark the series stale.
  for (const Host& h : hosts) {
    std::string prev = call_series(h.port), cur;
    for (int waited = 0; (cur = call_series(h.port)) != prev || cur.empty(); waited += 500) {
      REQUIRE(waited < 30000);
      prev = cur;
      sleep_ms(500);
    }
  }
  const double settled = now_s();
  for (int waited = 0;; waited += 250) {
    size_t fresh = 0;
    for (const json& s : prom.query("timestamp(causeway_host_info)")) fresh += value_of(s) > settled;
    if (fresh == 2) break;
    REQUIRE(waited < 30000);
    sleep_ms(250);
  }
  sleep_ms(1500);  // a rule evaluation over the final samples
  const double t_eval = now_s();
  for (Tracer* t : tracers) {
    INFO(t->log());
    REQUIRE(t->stop(2) == 0);
  }
  const HostStats st[2] = {host_stats(ta.db(), hosts[0].pid), host_stats(tb.db(), hosts[1].pid)};

  // Host identity: each target's causeway_host_info names the host its DB records.
  std::map<std::string, int> host_index;  // Prometheus host label -> hosts[]
  const json info = prom.query("causeway_host_info", t_eval);
  REQUIRE(info.size() == 2);
  for (int i = 0; i < 2; ++i) {
    CHECK(st[i].hostname == hosts[i].name);
    for (const json& s : info)
      if (s["metric"].value("instance", "") == instance(hosts[i])) {
        CHECK(s["metric"].value("host", "") == st[i].hostname);
        CHECK(s["metric"].value("boot_id", "") == st[i].boot_id);
        host_index[s["metric"].value("host", "")] = i;
      }
  }
  REQUIRE(host_index.size() == 2);

  // What a scrape costs (docs/FLEET.md quotes it): samples per target and Prometheus' timing.
  for (const json& s : prom.query("{__name__=~\"scrape_samples_scraped|scrape_duration_seconds\"}", t_eval)) {
    CHECK(value_of(s) > 0);
    std::printf("%s %s: %g\n", s["metric"].value("__name__", "").c_str(), s["metric"].value("instance", "").c_str(),
                value_of(s));
  }

  // Nothing lost in the pipeline, so the DB and the counters saw the same calls.
  for (const json& s : prom.query("sum by (instance) (causeway_dropped_events_total)", t_eval)) {
    CAPTURE(s.dump());
    REQUIRE(value_of(s) == 0);
  }

  // Calls per host and op, joined to their host the way the recording rules do.
  std::map<int, std::map<OpKey, uint64_t>> prom_calls;
  for (const json& s : prom.query(
           "sum by (host, source, op) (causeway_calls_total * on (job, instance) group_left (host) causeway_host_info)",
           t_eval)) {
    const json& m = s["metric"];
    REQUIRE(host_index.count(m.value("host", "")) == 1);
    prom_calls[host_index[m.value("host", "")]][{m.value("source", ""), m.value("op", "")}] =
        static_cast<uint64_t>(value_of(s));
  }
  const int iters[2] = {iters_a, iters_b};
  for (int i = 0; i < 2; ++i) {
    CAPTURE(hosts[i].name);
    // Host-wide block I/O (every process's, not only --pid's) goes on after the last scrape,
    // into the DB until the stop: the scrape holds every request that completed well before
    // it (1 s: the host ring's drain) and never more than the DB.
    const OpKey io{"io", "block_rq"};
    const std::string io_sql = "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = 'block_rq'";
    const int64_t io_db = q_int(tracers[i]->db(), io_sql);
    const int64_t io_before = q_int(tracers[i]->db(), io_sql + " AND e.ts_ns + e.dur_ns <= " +
                                                          std::to_string(static_cast<int64_t>((settled - 1) * 1e9)));
    const int64_t io_prom = prom_calls[i].count(io) ? static_cast<int64_t>(prom_calls[i][io]) : 0;
    CHECK(io_before <= io_prom);
    CHECK(io_prom <= io_db);
    std::printf("%s: block_rq %lld completed 1 s before the last scrape <= %lld scraped <= %lld in the DB\n",
                hosts[i].name.c_str(), static_cast<long long>(io_before), static_cast<long long>(io_prom),
                static_cast<long long>(io_db));
    prom_calls[i].erase(io);
    // The traced process's calls: exactly stats' counts, and the workload's own numbers.
    CHECK(prom_calls[i] == st[i].calls);
    CHECK(prom_calls[i][{"cuda", "cudaStreamSynchronize"}] == static_cast<uint64_t>(iters[i]));
  }
  CHECK(prom_calls[0][{"cuda", "cudaLaunchKernel"}] == static_cast<uint64_t>(iters_a));
  CHECK(prom_calls[1][{"cuda", "cudaMemcpy"}] == static_cast<uint64_t>(iters_b));
  CHECK(st[0].calls.size() == 2);
  CHECK(st[1].calls.size() == 2);

  // Every bucket of the traced process's histograms: its DB durations binned at the same bounds.
  for (int i = 0; i < 2; ++i) {
    const json buckets =
        prom.query("causeway_call_duration_seconds_bucket{source=\"cuda\",instance=\"" + instance(hosts[i]) + "\"}", t_eval);
    CHECK(buckets.size() == st[i].calls.size() * (std::size(kBounds) + 1));
    for (const json& s : buckets) {
      const std::string op = s["metric"].value("op", ""), le = s["metric"].value("le", "");
      std::string sql = "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = '" + op +
                        "' AND e.pid = " + std::to_string(hosts[i].pid);
      if (le != "+Inf") sql += " AND e.dur_ns <= " + std::to_string(std::llround(std::stod(le) * 1e9));
      CAPTURE(hosts[i].name);
      CAPTURE(op);
      CAPTURE(le);
      CHECK(static_cast<int64_t>(value_of(s)) == q_int(tracers[i]->db(), sql));
    }
  }

  // p99 per host and op: histogram_quantile over the whole trace's buckets vs stats.
  size_t compared = 0;
  for (const json& s : prom.query("histogram_quantile(0.99, sum by (host, source, op, le) "
                                  "(causeway_call_duration_seconds_bucket{source=\"cuda\"} "
                                  "* on (job, instance) group_left (host) causeway_host_info))",
                                  t_eval)) {
    const json& m = s["metric"];
    const int i = host_index.at(m.value("host", ""));
    const OpKey k{m.value("source", ""), m.value("op", "")};
    CAPTURE(hosts[i].name);
    CAPTURE(k.second);
    CAPTURE(value_of(s));
    REQUIRE(st[i].p99_s.count(k) == 1);
    CAPTURE(st[i].p99_s.at(k));
    p99_within_bucket(value_of(s), st[i].p99_s.at(k));
    std::printf("p99 %s %s: prometheus %.6f s, stats %.6f s\n", hosts[i].name.c_str(), k.second.c_str(), value_of(s),
                st[i].p99_s.at(k));
    ++compared;
  }
  CHECK(compared == st[0].calls.size() + st[1].calls.size());
  // 2.5 % of host a's iterations sleep 2 ms in the fake library (a sleep never ends early),
  // so its p99 is at least 2 ms, less stats' 0.4 % (the midpoint of its histogram bucket).
  CHECK(st[0].p99_s.at({"cuda", "cudaStreamSynchronize"}) >= 2e-3 * 0.996);

  // The recording rules of examples/ name both hosts (their values are unit-tested above).
  for (const std::string rule : {"host_source_op:causeway_calls:rate1m", "host_source_op:causeway_call_duration_seconds:p99_5m"}) {
    std::set<std::string> named;
    for (const json& s : prom.query(rule + "{op=\"cudaStreamSynchronize\"}", t_eval)) {
      named.insert(s["metric"].value("host", ""));
      CAPTURE(rule);
      CHECK(std::isfinite(value_of(s)));
      CHECK(value_of(s) > 0);
    }
    CHECK(named == std::set<std::string>{hosts[0].name, hosts[1].name});
  }
}

}  // namespace causeway::test
