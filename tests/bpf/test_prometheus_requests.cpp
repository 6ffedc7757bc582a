// The request families of /metrics under a real Prometheus (docs/METRICS.md "Requests"):
// Debian's prometheus scrapes `causeway trace --metrics` every second while the project's
// streaming server (tests/testprogs/inference_server.py, API server + engine core, both pinned
// to CPU 0) serves inference_client.py in three phases: quiet, a nice -10 CPU hog spinning on
// CPU 0 for 14 s, quiet again. At a moment after the last requests and after a later pass of
// the request causes, through Prometheus' HTTP API:
//   - the TTFT and TPOT histograms' _count equal `causeway requests --json`'s counts exactly
//     (its "semconv" object, and ttft_ms.n), both on the clients' path (another trace on a
//     shared host may find this server and scrape its /metrics, on after the last scrape);
//   - histogram_quantile(0.99) over the TTFT buckets lies in the bucket of requests' p99;
//   - causeway_request_time_lost_seconds_total{cause="cpu_contention"} rose during the hog
//     (most of its final value was added between the hog's start and a pass after its end) and
//     its value matches requests' tail breakdown of the same metric within 10%.
#include <doctest/doctest.h>

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/bpf/collector_harness.h"
#include "tests/bpf/prometheus_server.h"

namespace causeway::test {
namespace {

using json = nlohmann::json;

const char* kPython = "/usr/bin/python3";

double wall_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

double sample_value(const json& s) { return std::stod(s["value"][1].get<std::string>()); }

// The one sample of an instant query, or `none` when the vector is empty.
double scalar(const PrometheusServer& prom, const std::string& expr, double at, double none = -1) {
  const json v = prom.query(expr, at);
  if (v.empty()) return none;
  REQUIRE(v.size() == 1);
  return sample_value(v[0]);
}

// A server the test started, stopped when the test case ends (however it ends).
struct ServerProcess {
  pid_t pid;
  ~ServerProcess() {
    ::kill(pid, SIGTERM);
    wait_exit(pid);
  }
};

uint32_t first_child_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  uint32_t c = 0;
  f >> c;
  return c;
}

// The tail's lost time of `metric` by cause, from `causeway requests --json` (its semconv object).
json requests_doc(const std::string& db, const std::string& metric, const std::string& path = "") {
  std::vector<std::string> args{"requests", "--db", db, "--json", "--metric", metric, "--slowest", "0"};
  if (!path.empty()) args.insert(args.end(), {"--path", path});
  auto r = run_causeway(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("Prometheus scraping a live streaming server: GenAI histograms equal `causeway requests`; a CPU hog's lost time rises") {
  if (const std::string why = prometheus_missing(); !why.empty()) {
    std::printf("SKIPPED: %s\n", why.c_str());
    std::exit(77);
  }
  if (run_process({kPython, "-c", "import aiohttp"}).exit_code != 0) {
    std::printf("SKIPPED: python3-aiohttp is not installed (scripts/install-deps.sh --tests)\n");
    std::exit(77);
  }
  TempDir dir;
  const int port = 20000 + static_cast<int>((::getpid() * 7) % 20000);
  pid_t server = spawn({kPython, source_dir() + "/tests/testprogs/inference_server.py", "--port", std::to_string(port),
                        "--cudart", testprog("libcudart.so.13"), "--step-ms", "20", "--ready-file", dir.file("server.ready")},
                       dir.file("server.log"));
  const ServerProcess reap{server};
  wait_for_file(dir.file("server.ready"), 30000);
  const uint32_t engine = first_child_of(server);
  REQUIRE(engine > 0);
  // The hog takes CPU 0 from whatever serves on it: pin every thread of both processes there.
  for (uint32_t pid : {static_cast<uint32_t>(server), engine})
    REQUIRE(run_process({"/usr/bin/taskset", "-a", "-p", "-c", "0", std::to_string(pid)}).exit_code == 0);
  const std::string client_py = source_dir() + "/tests/testprogs/inference_client.py";
  auto client = [&](int n, const std::string& out) {
    auto c = run_process({kPython, client_py, "--port", std::to_string(port), "--requests", std::to_string(n),
                          "--concurrency", "4", "--max-tokens", "10", "--out", dir.file(out)});
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  };
  client(4, "warm.json");  // imports paid before the trace

  const int metrics_port = free_loopback_port();
  PrometheusServer prom(dir, "global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}\n"
                             "scrape_configs:\n"
                             "  - job_name: causeway\n"
                             "    static_configs: [{targets: ['127.0.0.1:" + std::to_string(metrics_port) + "']}]\n");
  Tracer t(dir, {"--pid", std::to_string(engine), "--no-stack", "--metrics", "127.0.0.1:" + std::to_string(metrics_port)});
  for (int waited = 0; prom.query("up{job=\"causeway\"} == 1").empty(); waited += 250) {
    REQUIRE_MESSAGE(waited < 60000, prom.log());
    sleep_ms(250);
  }

  client(40, "quiet1.json");
  sleep_ms(1500);
  const double hog_from = wall_s();
  // nice -10 on CPU 0: the scheduler gives the serving threads a small share while it spins.
  pid_t hog = spawn({"/usr/bin/nice", "-n", "-10", "/usr/bin/taskset", "-c", "0", kPython, "-c",
                     "import time\nt = time.time() + 14\nwhile time.time() < t: pass"},
                    dir.file("hog.log"));
  Child hog_process(hog);
  client(60, "hog.json");
  hog_process.wait();
  const double hog_to = wall_s();
  client(40, "quiet2.json");
  // A pass of the request causes runs at most every 10 s (and analysis may run late on a busy
  // host): wait for two, then for a scrape taken after them, and read everything at that moment.
  sleep_ms(22000);
  const double settled = wall_s();
  double t_eval = 0;
  for (int waited = 0;; waited += 250) {
    const json ts = prom.query("timestamp(causeway_metrics_scrapes_total)");
    if (!ts.empty() && sample_value(ts[0]) > settled + 0.5) {
      t_eval = sample_value(ts[0]);
      break;
    }
    REQUIRE_MESSAGE(waited < 30000, prom.log());
    sleep_ms(250);
  }
  // Every series at t_eval, before the stop makes them stale. The clients' path only: on a
  // shared host another helper's trace may find this server and scrape its own /metrics, and
  // its requests go on after t_eval.
  const std::string sel = "{path=\"/v1/completions\"}";
  const double prom_ttft = scalar(prom, "sum(gen_ai_server_time_to_first_token_seconds_count" + sel + ")", t_eval);
  const double prom_tpot = scalar(prom, "sum(gen_ai_server_time_per_output_token_seconds_count" + sel + ")", t_eval);
  const double prom_requests = scalar(prom, "sum(causeway_requests_total" + sel + ")", t_eval);
  const double prom_p99 = scalar(
      prom, "histogram_quantile(0.99, sum by (le) (gen_ai_server_time_to_first_token_seconds_bucket" + sel + "))", t_eval);
  auto lost_at = [&](const std::string& metric, const std::string& cause, double at) {
    return scalar(prom, "causeway_request_time_lost_seconds_total{metric=\"" + metric + "\",cause=\"" + cause + "\"}", at, 0);
  };
  REQUIRE(t.stop(SIGINT) == 0);
  CAPTURE(t.log());

  const json completions = requests_doc(t.db(), "ttft", "/v1/completions");
  const json& r = completions["requests"];
  const json& sc = r["semconv"];
  CAPTURE(sc.dump());
  CHECK(r["count"] == 140);  // the clients' completions (the warm-up ran before the trace)
  MESSAGE("other requests served meanwhile: "
          << q_int(t.db(), "SELECT count(*) FROM requests WHERE path != '/v1/completions'"));
  CHECK(r["errors"] == 0);
  CHECK(prom_requests == r["count"].get<double>());
  CHECK(prom_ttft == r["ttft_ms"]["n"].get<double>());
  CHECK(prom_ttft == sc["gen_ai_server_time_to_first_token_seconds"]["count"].get<double>());
  CHECK(prom_tpot == sc["gen_ai_server_time_per_output_token_seconds"]["count"].get<double>());
  CHECK(prom_tpot == 140);  // 10 events each: every completion has a TPOT
  // histogram_quantile interpolates inside the bucket holding rank 0.99·n; requests' p99 is
  // the ceil(0.99·n)-th value: the same bucket (upper bound p99_le).
  const double p99_s = sc["gen_ai_server_time_to_first_token_seconds"]["p99"].get<double>();
  const double le = sc["gen_ai_server_time_to_first_token_seconds"]["p99_le"].get<double>();
  double lower = 0;
  for (double b : {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0})
    if (b < le) lower = b;
  CAPTURE(p99_s);
  CAPTURE(prom_p99);
  CHECK(p99_s > lower);
  CHECK(p99_s <= le);
  CHECK(prom_p99 > lower);
  CHECK(prom_p99 <= le);

  // The hog: the metric whose tail it dominates in `causeway requests` (TTFT or the token gaps).
  const json ttft_doc = requests_doc(t.db(), "ttft");
  const json itl_doc = requests_doc(t.db(), "itl");
  std::string metric;
  double want = 0;
  for (const json* d : {&ttft_doc, &itl_doc}) {
    const json& causes = (*d)["requests"]["semconv"]["causeway_request_time_lost_seconds_total"];
    const double v = causes["causes"].value("cpu_contention", 0.0);
    if (v > want) want = v, metric = causes["metric"].get<std::string>();
  }
  REQUIRE_MESSAGE(want > 0, "no cpu_contention in either tail: " << ttft_doc["requests"]["tail"].dump() << " "
                                                                    << itl_doc["requests"]["tail"].dump());
  const double got = lost_at(metric, "cpu_contention", t_eval);
  const double before = lost_at(metric, "cpu_contention", hog_from);
  // A cause is published by the first pass after its requests: up to ~10 s after the hog,
  // plus the analysis' own time.
  const double after_hog = lost_at(metric, "cpu_contention", std::min(t_eval, hog_to + 12));
  MESSAGE(metric << " tail: cpu_contention " << got << " s on /metrics (" << before << " before the hog, " << after_hog
                 << " 12 s after it), " << want << " s in causeway requests; p99 TTFT " << p99_s << " s, Prometheus "
                 << prom_p99 << " s");
  CHECK(got == doctest::Approx(want).epsilon(0.10));
  CHECK(after_hog - before >= 0.5 * got);  // it rose during the hog
  // The same as PromQL sees it: the rate over the hog's span (to a pass after it) is positive.
  const double span_s = std::min(t_eval, hog_to + 12) - hog_from;
  CHECK(scalar(prom, "rate(causeway_request_time_lost_seconds_total{metric=\"" + metric + "\",cause=\"cpu_contention\"}[" +
                         std::to_string(static_cast<int>(span_s)) + "s])",
               hog_from + span_s, 0) > 0);
}

}  // namespace causeway::test
