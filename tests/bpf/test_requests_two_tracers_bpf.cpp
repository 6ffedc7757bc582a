// Two causeway tracers of one server (a fleet agent beside a hand-run trace; two test runs at
// once on a CI host): each one's /metrics scrapes are the other's to leave out too (bpf/
// sock.bpf.h tracer_conns, docs/INFERENCE.md "Kernel side"). Each tracer's own_conns is
// its own, so without the host's shared map each stored the other's scrapes as user requests
// (GET /metrics rows), which is how gpu-check --fake counted 21 requests for its 20 while
// another tracer of the host scraped its server.
#include <doctest/doctest.h>
#include <signal.h>

#include "tests/bpf/requests_stacks_support.h"

using namespace causeway;
using namespace causeway::test;
using namespace causeway::test::stacks;

TEST_CASE("two tracers of one server: neither stores the other's /metrics scrapes, each counts those the server took") {
  need(run_process({kPython, "-c", "import aiohttp"}).exit_code == 0,
       "python3-aiohttp is not installed (scripts/install-deps.sh --tests)");
  TempDir dir;
  const int port = test_port(0);
  Server srv({kPython, servers_dir() + "/aiohttp_server.py", std::to_string(port), dir.file("server.ready")}, dir);
  // Found by --http-port alone, scraped each 200 ms by both: a connection of each tracer to
  // the server about every 100 ms while both run.
  const std::vector<std::string> args{"--http-port", std::to_string(port), "--no-stack", "--engine-metrics-interval", "200ms"};
  Tracer first(dir, args, "first", "");
  Tracer second(dir, args, "second", "");
  // The server is proven to speak HTTP to each tracer by its parsed requests: both scrape it
  // from then on, while the client goes on.
  run_client(dir, port, 20, 10);
  sleep_ms(2000);
  REQUIRE(second.stop(SIGINT) == 0);
  REQUIRE(first.stop(SIGINT) == 0);
  const ClientRun sent = client_results(dir.file("client.json"));
  REQUIRE(sent.peer_of.size() == 200);
  for (const Tracer* t : {&first, &second}) {
    CAPTURE(t->log());
    const std::string& db = t->db();
    // Every user request once, nothing else: no /metrics row, from this tracer or the other.
    CHECK(stored(db, srv.pid, "/hello").size() == 200);
    CHECK(stored(db, srv.pid, "/metrics").empty());
    CHECK(q_int(db, "SELECT count(*) FROM requests") == 200);
    // Its own scrapes counted exactly, as in every stack test.
    CHECK(stat_of(db, "engine_scrapes") >= 2);
    CHECK(stat_of(db, "http_own_scrapes_excluded") + stat_of(db, "engine_scrape_unaccepted") ==
          stat_of(db, "engine_scrape_connections"));
    MESSAGE(db << ": own scrapes " << stat_of(db, "engine_scrape_connections") << " (excluded "
               << stat_of(db, "http_own_scrapes_excluded") << ", unaccepted " << stat_of(db, "engine_scrape_unaccepted")
               << "), the other tracer's excluded " << stat_of(db, "http_tracer_scrapes_excluded"));
  }
  // Each left out the other's scrapes the server took while both traced it: at least one
  // (2 s of both scraping), at most all the other made (a tracer of another checkout on this
  // host scraping the server too would be stored, and fail the checks above).
  const auto other_taken = [&](const Tracer& t, const Tracer& other) {
    CHECK(stat_of(t.db(), "http_tracer_scrapes_excluded") >= 1);
    CHECK(stat_of(t.db(), "http_tracer_scrapes_excluded") <= stat_of(other.db(), "engine_scrape_connections"));
  };
  other_taken(first, second);
  other_taken(second, first);
}
