// `causeway trace --metrics HOST:PORT` under real eBPF: a Prometheus scrape during the trace
// counts the workload's calls, and the chain gauge appears once the correlator names a cause.
#include <doctest/doctest.h>
#include <httplib.h>

#include <random>

#include "tests/bpf/collector_harness.h"

using namespace causeway::test;

namespace {

std::string scrape(int port) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(2);
  auto r = cli.Get("/metrics");
  return r && r->status == 200 ? r->body : "";
}

// The value of the first sample line that starts with `prefix`, or -1.
double sample(const std::string& body, const std::string& prefix) {
  size_t pos = 0;
  while ((pos = body.find(prefix, pos)) != std::string::npos) {
    if (pos == 0 || body[pos - 1] == '\n') {
      size_t sp = body.find(' ', pos + prefix.size());
      size_t nl = body.find('\n', sp);
      return std::stod(body.substr(sp + 1, nl - sp - 1));
    }
    pos += prefix.size();
  }
  return -1;
}

}  // namespace

TEST_CASE("trace --metrics serves per-op counters, histograms and drop counters while tracing") {
  TempDir dir;
  std::mt19937 gen(std::random_device{}());
  const int port = 20000 + static_cast<int>(gen() % 20000);
  const int iters = 3000;
  // --pid of a workload waiting to start: other tests' workloads on the same fake library
  // (a shared CI host) must not add to the counts.
  Child w(spawn({testprog("cw_workload"), "--threads", "1", "--iterations", std::to_string(iters), "--latency-us",
                     "20", "--ops", "stream_sync", "--ready-file", dir.file("w.up"), "--wait-file", dir.file("go")},
                 dir.file("w.log")));
  const pid_t pid = w.pid();
  wait_for_file(dir.file("w.up"));
  Tracer t(dir, {"--lib", testprog("libcudart.so.13"), "--no-stack", "--metrics", "127.0.0.1:" + std::to_string(port),
                 "--pid", std::to_string(pid)});
  touch(dir.file("go"));
  REQUIRE(w.wait() == 0);
  sleep_ms(500);  // the drain loop has taken every call off the ring
  std::string body = scrape(port);
  REQUIRE_FALSE(body.empty());
  CHECK(body.find("# TYPE causeway_calls_total counter") != std::string::npos);
  CHECK(sample(body, "causeway_calls_total{source=\"cuda\",op=\"cudaStreamSynchronize\"}") == iters);
  CHECK(sample(body, "causeway_call_duration_seconds_count{source=\"cuda\",op=\"cudaStreamSynchronize\"}") == iters);
  CHECK(body.find("causeway_call_duration_seconds_bucket{source=\"cuda\",op=\"cudaStreamSynchronize\",le=\"+Inf\"}") !=
        std::string::npos);
  // The writer's health, published each second: healthy, nothing lost.
  CHECK(sample(body, "causeway_writer_failing{fault=\"disk_full\"}") == 0);
  CHECK(sample(body, "causeway_dropped_events_total{reason=\"dropped_writer\"}") == 0);
  REQUIRE(t.stop(2) == 0);
  CHECK(q_int(t.db(), "SELECT count(*) FROM events WHERE op_id = 116 AND pid = " + std::to_string(pid)) == iters);
}
