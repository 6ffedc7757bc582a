// Prometheus exposition: a real scrape over HTTP of a server on an ephemeral port, checked
// against the text format (HELP/TYPE once per family before its samples, cumulative
// histogram buckets ending in +Inf = _count, _sum in seconds) and the values observed.
#include <doctest/doctest.h>

#include <httplib.h>

#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "metrics/exposition.h"
#include "metrics/registry.h"
#include "metrics/server.h"

using namespace causeway;

namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value;
};

// Minimal parser of the text format; fails the test on any malformed line.
std::vector<Sample> parse(const std::string& text, std::map<std::string, std::string>& types) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  std::map<std::string, bool> help;
  while (std::getline(in, line)) {
    REQUIRE(!line.empty());
    if (line.starts_with("# HELP ")) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      CHECK_FALSE(help[name]);
      help[name] = true;
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      CHECK(help[name]);
      CHECK(types.count(name) == 0);
      types[name] = type;
      continue;
    }
    Sample s;
    size_t brace = line.find('{'), space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    s.name = line.substr(0, std::min(brace, space));
    if (brace != std::string::npos) {
      size_t close = line.rfind('}');
      REQUIRE(close != std::string::npos);
      std::string body = line.substr(brace + 1, close - brace - 1);
      size_t pos = 0;
      while (pos < body.size()) {
        size_t eq = body.find('=', pos);
        REQUIRE(eq != std::string::npos);
        REQUIRE(body[eq + 1] == '"');
        std::string key = body.substr(pos, eq - pos), val;
        size_t i = eq + 2;
        for (; i < body.size() && body[i] != '"'; ++i) {
          if (body[i] == '\\') {
            ++i;
            val += body[i] == 'n' ? '\n' : body[i];
          } else {
            val += body[i];
          }
        }
        s.labels[key] = val;
        pos = i + 2;  // past the quote and the comma
      }
    }
    s.value = std::stod(line.substr(space + 1));
    // Every sample belongs to a family declared before it.
    std::string family = s.name;
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (family.ends_with(suffix) && !types.count(family)) family = family.substr(0, family.size() - std::string(suffix).size());
    CHECK(types.count(family) == 1);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

TEST_CASE("a scrape over HTTP returns valid exposition with the observed values") {
  MetricsRegistry reg;
  // cudaFree: 3 calls at 400 µs, one at 1.9 ms (an error); cudaLaunchKernel: 2 at 5 µs, one at 20 s.
  for (int i = 0; i < 3; ++i) reg.observe_call("cuda", "cudaFree", 400'000, false);
  reg.observe_call("cuda", "cudaFree", 1'900'000, true);
  reg.observe_call("cuda", "cudaLaunchKernel", 5'000, false);
  reg.observe_call("cuda", "cudaLaunchKernel", 5'000, false);
  reg.observe_call("cuda", "cudaLaunchKernel", 20'000'000'000, false);
  // Exactly on the first bound (1 µs; 1000 * 1e-9 is just above 1e-06 in doubles) and on every bound.
  reg.observe_call("cuda", "cudaGetDevice", 1'000, false);
  for (int64_t ns : kLatencyBucketsNs) reg.observe_call("cuda", "cudaEventQuery", ns, false);
  reg.set_drops("ring", 7);
  reg.set_drops("writer", 0);
  reg.set_chains("cpu_contention", 2);
  reg.set_chains("weird \"cause\"\n", 1);

  auto server = MetricsServer::start("127.0.0.1:0", reg);
  REQUIRE(server.ok());
  REQUIRE((*server)->port() > 0);
  httplib::Client client("127.0.0.1", (*server)->port());
  auto res = client.Get("/metrics");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type").find("text/plain; version=0.0.4") == 0);

  std::map<std::string, std::string> types;
  auto samples = parse(res->body, types);
  CHECK(types["causeway_calls_total"] == "counter");
  CHECK(types["causeway_call_duration_seconds"] == "histogram");
  CHECK(types["causeway_dropped_events_total"] == "counter");
  CHECK(types["causeway_chains"] == "gauge");

  auto value = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    for (const Sample& s : samples) {
      bool match = s.name == name;
      for (const auto& [k, v] : labels) match = match && s.labels.count(k) && s.labels.at(k) == v;
      if (match) return s.value;
    }
    FAIL("no sample " << name);
    return 0.0;
  };
  CHECK(value("causeway_calls_total", {{"op", "cudaFree"}, {"source", "cuda"}}) == 4);
  CHECK(value("causeway_call_errors_total", {{"op", "cudaFree"}}) == 1);
  CHECK(value("causeway_call_duration_seconds_count", {{"op", "cudaFree"}}) == 4);
  CHECK(value("causeway_call_duration_seconds_sum", {{"op", "cudaFree"}}) == doctest::Approx(0.0031));
  CHECK(value("causeway_call_duration_seconds_bucket", {{"op", "cudaFree"}, {"le", "0.00025"}}) == 0);
  CHECK(value("causeway_call_duration_seconds_bucket", {{"op", "cudaFree"}, {"le", "0.0005"}}) == 3);
  CHECK(value("causeway_call_duration_seconds_bucket", {{"op", "cudaFree"}, {"le", "0.001"}}) == 3);
  CHECK(value("causeway_call_duration_seconds_bucket", {{"op", "cudaFree"}, {"le", "0.0025"}}) == 4);
  // A value on a bound falls in that bucket (le is inclusive); one above the last only in +Inf.
  CHECK(value("causeway_call_duration_seconds_bucket", {{"op", "cudaLaunchKernel"}, {"le", "5e-06"}}) == 2);
  CHECK(value("causeway_call_duration_seconds_bucket", {{"op", "cudaLaunchKernel"}, {"le", "10"}}) == 2);
  CHECK(value("causeway_call_duration_seconds_bucket", {{"op", "cudaLaunchKernel"}, {"le", "+Inf"}}) == 3);
  CHECK(value("causeway_call_duration_seconds_bucket", {{"op", "cudaGetDevice"}, {"le", "1e-06"}}) == 1);
  for (size_t i = 0; i < kLatencyBucketsSeconds.size(); ++i) {
    CAPTURE(kLatencyBucketsSeconds[i]);
    const double le = kLatencyBucketsSeconds[i];
    std::string le_text;
    for (const Sample& s : samples)  // the label as rendered, for this bound
      if (s.name == "causeway_call_duration_seconds_bucket" && s.labels.at("op") == "cudaEventQuery" &&
          s.labels.at("le") != "+Inf" && std::stod(s.labels.at("le")) == le)
        le_text = s.labels.at("le");
    REQUIRE(!le_text.empty());
    CHECK(value("causeway_call_duration_seconds_bucket", {{"op", "cudaEventQuery"}, {"le", le_text}}) == double(i + 1));
  }
  CHECK(value("causeway_dropped_events_total", {{"reason", "ring"}}) == 7);
  CHECK(value("causeway_chains", {{"cause", "cpu_contention"}}) == 2);
  CHECK(value("causeway_chains", {{"cause", "weird \"cause\"\n"}}) == 1);  // escaped, parsed back
  CHECK(res->body.find("weird \\\"cause\\\"\\n") != std::string::npos);

  // Buckets are cumulative, end in +Inf, and +Inf equals _count, for every series.
  std::map<std::string, std::vector<std::pair<std::string, double>>> buckets;
  for (const Sample& s : samples)
    if (s.name == "causeway_call_duration_seconds_bucket") buckets[s.labels.at("op")].push_back({s.labels.at("le"), s.value});
  for (const auto& [op, v] : buckets) {
    CAPTURE(op);
    REQUIRE(!v.empty());
    CHECK(v.back().first == "+Inf");
    for (size_t i = 1; i < v.size(); ++i) {
      CHECK(v[i].second >= v[i - 1].second);
      if (i + 1 < v.size()) CHECK(std::stod(v[i].first) > std::stod(v[i - 1].first));
    }
    CHECK(v.back().second == value("causeway_call_duration_seconds_count", {{"op", op}}));
  }

  // A second scrape sees new observations; the scrape counter counts both.
  reg.observe_call("nccl", "ncclAllReduce", 1'000'000, false);
  auto res2 = client.Get("/metrics");
  REQUIRE(res2);
  CHECK(res2->body.find("causeway_calls_total{source=\"nccl\",op=\"ncclAllReduce\"} 1\n") != std::string::npos);
  CHECK(res2->body.find("causeway_metrics_scrapes_total 2\n") != std::string::npos);
  CHECK(client.Get("/nope")->status == 404);
}

TEST_CASE("bad addresses and taken ports are errors at start, not later") {
  MetricsRegistry reg;
  CHECK(MetricsServer::start("9464", reg).error().code == "usage");
  CHECK(MetricsServer::start("127.0.0.1:http", reg).error().code == "usage");
  CHECK(MetricsServer::start("127.0.0.1:70000", reg).error().code == "usage");
  auto a = MetricsServer::start("127.0.0.1:0", reg);
  REQUIRE(a.ok());
  auto b = MetricsServer::start("127.0.0.1:" + std::to_string((*a)->port()), reg);
  CHECK_FALSE(b.ok());
  CHECK(b.error().code == "metrics_bind");
  (*a)->stop();
}

TEST_CASE("the lock-free path: ops named once by id, observed from several threads") {
  MetricsRegistry reg;
  reg.name_op(116, "cuda", "cudaStreamSynchronize");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&reg] {
      for (int i = 0; i < 50'000; ++i) reg.observe(116, (i % 2) ? 3'000 : 2'000'000, i % 1000 == 0);
      for (int i = 0; i < 10; ++i) reg.observe(9999, 1, false);  // never named
    });
  for (auto& th : threads) th.join();
  reg.observe_call("cuda", "cudaStreamSynchronize", 3'000, false);  // same series by name
  std::string text = render_prometheus(reg.snapshot());
  CHECK(text.find("causeway_calls_total{source=\"cuda\",op=\"cudaStreamSynchronize\"} 200001\n") != std::string::npos);
  CHECK(text.find("causeway_call_errors_total{source=\"cuda\",op=\"cudaStreamSynchronize\"} 200\n") != std::string::npos);
  CHECK(text.find("causeway_call_duration_seconds_bucket{source=\"cuda\",op=\"cudaStreamSynchronize\",le=\"5e-06\"} 100001\n") !=
        std::string::npos);
  CHECK(text.find("causeway_call_duration_seconds_bucket{source=\"cuda\",op=\"cudaStreamSynchronize\",le=\"+Inf\"} 200001\n") !=
        std::string::npos);
  CHECK(text.find("causeway_calls_total{source=\"unknown\",op=\"op9999\"} 40\n") != std::string::npos);
}

TEST_CASE("the host is one causeway_host_info series: absent until set, escaped, valid UTF-8") {
  MetricsRegistry reg;
  std::map<std::string, std::string> types;
  auto samples = parse(render_prometheus(reg.snapshot()), types);
  CHECK(types["causeway_host_info"] == "gauge");
  for (const Sample& s : samples) CHECK(s.name != "causeway_host_info");

  // A hostname is set by whoever has root on the host: a quote, and a byte that is not UTF-8
  // (Prometheus rejects a whole scrape whose label value is invalid UTF-8).
  reg.set_host("gpu-node-7", "0f5c1d2e-aaaa-bbbb-cccc-123456789abc");
  reg.set_host("gpu\"node\xff-7", "0f5c1d2e-aaaa-bbbb-cccc-123456789abc");  // the last one wins
  types.clear();
  samples = parse(render_prometheus(reg.snapshot()), types);
  std::vector<Sample> info;
  for (const Sample& s : samples)
    if (s.name == "causeway_host_info") info.push_back(s);
  REQUIRE(info.size() == 1);
  CHECK(info[0].value == 1);
  CHECK(info[0].labels.at("host") == "gpu\"node\xEF\xBF\xBD-7");  // U+FFFD for the bad byte
  CHECK(info[0].labels.at("boot_id") == "0f5c1d2e-aaaa-bbbb-cccc-123456789abc");
}
