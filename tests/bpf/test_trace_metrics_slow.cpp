// `causeway trace --duration 4s --metrics HOST:PORT` while 300 sockets sit idle and 2 drip a
// request head one byte a second (issue 35 item 4: two dripping sockets held both workers of
// the old endpoint, every scrape timed out, and `trace --duration 20s` exited only when the
// attacker stopped, after 66 s). An honest scrape is answered within 1 s, and the trace exits
// on time with the slow sockets still open.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <random>

#include "tests/bpf/collector_harness.h"
#include "tests/support/slow_clients.h"

using namespace causeway::test;
using Clock = std::chrono::steady_clock;

TEST_CASE("trace --metrics under 300 idle and 2 dripping sockets: scrapes within 1 s, --duration exits on time") {
  TempDir dir;
  std::mt19937 gen(std::random_device{}());
  const int port = 20000 + static_cast<int>(gen() % 20000);
  // --pid of this test: nothing of other tests' workloads is traced (a shared host).
  Tracer t(dir, {"--lib", testprog("libcudart.so.13"), "--no-stack", "--duration", "4s", "--metrics",
                 "127.0.0.1:" + std::to_string(port), "--pid", std::to_string(::getpid())});
  const auto ready = Clock::now();
  SlowClients slow(port, 300, 2, std::chrono::milliseconds(1000));
  REQUIRE(slow.connected() == 302);
  sleep_ms(300);
  const std::string get = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n";
  std::vector<double> times;
  for (int i = 0; i < 3; ++i) {
    HttpReply r = http_exchange("127.0.0.1", port, get, 3000);
    REQUIRE_MESSAGE(r.status == 200, "scrape " << i << " under 302 slow sockets: '" << r.head << "'");
    CHECK(r.body.find("causeway_metrics_scrapes_total") != std::string::npos);
    times.push_back(r.ms);
    sleep_ms(200);
  }
  for (double ms : times) CHECK_MESSAGE(ms < 1000, "scrape took " << ms << " ms");
  CHECK(slow.closed_by_server() == 0);  // still open: the exit below happens with them there
  const int rc = t.stop(0);             // signal 0: no signal, wait for --duration's own exit
  const double exit_s = std::chrono::duration<double>(Clock::now() - ready).count();
  MESSAGE("scrapes " << times[0] << ", " << times[1] << ", " << times[2] << " ms; trace --duration 4s exited " << exit_s
                     << " s after ready");
  CHECK(rc == 0);
  // 4 s plus the detach and the final flush on a busy host; the old endpoint waited for the
  // dripping sockets (as long as they drip).
  CHECK_MESSAGE(exit_s < 12, "trace --duration 4s took " << exit_s << " s to exit with slow sockets open");
}
