// Requests timed from the kernel's arrival of their bytes (docs/INFERENCE.md "Arrival time"):
// start/end from the reads' arrival times, the read that completed each request kept, the
// API wait (end arrival → that read) per request and in percentiles, TTFT and E2E from the
// arrival; the api_server_busy cause claims the wait while the server's thread was on CPU,
// and leaves a runnable-but-off-CPU server to cpu_contention.
#include <doctest/doctest.h>

#include "diagnosis/request_latency.h"
#include "requests/to_record.h"
#include "requests/tracker.h"
#include "tests/unit/request_db.h"
#include "tests/unit/request_feed.h"
#include "tests/unit/request_rows.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using namespace causeway::requests;
using namespace causeway::requests::test_feed;
using json = nlohmann::json;

namespace {

// A read at `at` whose first and last bytes the kernel received first_us / last_us earlier.
void read_arrived(Feed& f, int32_t fd, const std::string& bytes, int64_t at, uint32_t first_us, uint32_t last_us,
                  bool tls = false) {
  SockRecord r;
  r.ts_ns = at;
  r.pid = kPid;
  r.fd = fd;
  r.op = SockOp::read;
  r.bytes = bytes.size();
  r.data = bytes;
  r.total = bytes.size();
  r.enter_ns = at - 1;
  r.arrive_first_us = first_us;
  r.arrive_last_us = last_us;
  r.tls = tls;
  f.t.add(r);
}

// A streamed response of two events; tls: written as TLS plaintext through libssl.
void sse_response(Feed& f, int32_t fd, int64_t first_token_at, bool tls = false) {
  auto write = [&](const std::string& bytes, int64_t at) {
    SockRecord r;
    r.ts_ns = at;
    r.pid = kPid;
    r.fd = fd;
    r.op = SockOp::write;
    r.bytes = bytes.size();
    r.data = bytes;
    r.total = bytes.size();
    r.enter_ns = at;
    r.tls = tls;
    f.t.add(r);
  };
  write(kSseHead, first_token_at - 1000);
  write(chunk(event(0)), first_token_at);
  write(chunk(event(1)), first_token_at + 1'000'000);
  write("0\r\n\r\n", first_token_at + 2'000'000);
}

}  // namespace

TEST_CASE("arrival: start and end are the kernel's receipt of the first and last byte; the completing read is kept") {
  Feed f;
  f.accept(7);
  const std::string req = post("/v1/completions", std::string(2000, 'p'), "X-Request-Id: a1\r\n");
  // Two reads 30 ms after the bytes came (the event loop was busy): the head's first byte
  // arrived 40 ms before the first read, the last byte 35 ms before the second.
  const int64_t t = 10'000'000'000;
  read_arrived(f, 7, req.substr(0, 1000), t, 40'000, 38'000);
  read_arrived(f, 7, req.substr(1000), t + 5'000'000, 36'000, 35'000);
  sse_response(f, 7, t + 9'000'000);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  const Request& q = rs[0];
  CHECK(q.start_ns == t - 40'000'000);
  CHECK(q.end_ns == t + 5'000'000 - 35'000'000);
  CHECK(q.read_end_ns == t + 5'000'000);
  const RequestRecord o = to_record(q);
  CHECK(o.read_end_ns == t + 5'000'000);
  REQUIRE(o.api_wait_ns);
  CHECK(*o.api_wait_ns == 35'000'000);
  // TTFT from the last byte's arrival: 35 ms of waiting + 4 ms to the first token.
  REQUIRE(o.ttft_ns);
  CHECK(*o.ttft_ns == 39'000'000);
  // E2E from the first byte's arrival to the last byte written.
  REQUIRE(o.e2e_ns);
  CHECK(*o.e2e_ns == (t + 11'000'000) - (t - 40'000'000));
}

TEST_CASE("arrival: a read without arrival times (hook not attached, data before the trace) stands for them") {
  Feed f;
  f.accept(7);
  f.read(7, post("/v1/completions", "{}"), 5'000);
  sse_response(f, 7, 9'000'000);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].start_ns == 5'000);
  CHECK(rs[0].end_ns == 5'000);
  CHECK(rs[0].read_end_ns == 5'000);
  const RequestRecord o = to_record(rs[0]);
  REQUIRE(o.api_wait_ns);
  CHECK(*o.api_wait_ns == 0);
}

TEST_CASE("arrival: TLS plaintext reads take the arrival of the cipher bytes read before them") {
  Feed f;
  f.accept(9);
  const int64_t t = 20'000'000'000;
  // The socket's own (cipher) reads carry the arrival; the plaintext from libssl does not.
  // The handshake's read is not the request's: only the last socket read before the first
  // plaintext counts.
  read_arrived(f, 9, "\x16\x03\x01\x02\x00" + std::string(200, 'h'), t - 50'000'000, 1'000, 900);
  read_arrived(f, 9, std::string(300, 'x'), t, 12'000, 11'000);
  read_arrived(f, 9, post("/v1/chat/completions", "{}"), t + 100'000, 0, 0, true);
  sse_response(f, 9, t + 3'000'000, true);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].tls);
  CHECK(rs[0].start_ns == t - 12'000'000);
  CHECK(rs[0].end_ns == t - 11'000'000);
  CHECK(rs[0].read_end_ns == t + 100'000);
}

namespace {

constexpr uint32_t kServer = 100;  // the API server (request_rows.h), its event loop thread 100
constexpr uint32_t kHogPid = 777;

// 40 requests; five of them (b0..b4, from 5000 ms) waited 30 ms unread in the socket while
// the server's thread was busy. on_cpu: the thread ran a CPU-bound handler throughout; else it
// was runnable but a hog (777) held its CPU.
void busy_api_db(StoreWriter& w, bool on_cpu) {
  w.push_meta(ProcessRecord{.pid = kServer, .ppid = 1, .comm = "api-server"});
  w.push_meta(ProcessRecord{.pid = kHogPid, .ppid = 1, .comm = "hog"});
  w.push_meta(ThreadRecord{.tid = kServer, .pid = kServer, .comm = "uvloop-main"});
  for (int i = 0; i < 35; ++i) {
    Request r = streamed("q" + std::to_string(i), i * 100, 5, 3, 10);
    r.read_end_ns = r.end_ns + 200'000;  // read 0.2 ms after it came
    w.push_meta(to_record(r));
  }
  for (int i = 0; i < 5; ++i) {
    Request r = streamed("b" + std::to_string(i), 5000 + i, 35, 3, 10);
    r.read_end_ns = r.end_ns + 30 * kMs;
    w.push_meta(to_record(r));
  }
  auto sw = [&](int64_t ms, uint32_t prev, int64_t state, uint32_t next) {
    SwitchRecord s;
    s.ts_ns = kT0 + ms * kMs;
    s.cpu = 0;
    s.prev_tid = s.prev_pid = prev;
    s.prev_state = state;
    s.next_tid = s.next_pid = next;
    w.push_wait(s);
  };
  if (on_cpu) {
    sw(4990, 0, 0, kServer);       // the handler starts
    sw(5050, kServer, 1, 0);       // and sleeps at last
  } else {
    sw(4990, kServer, 0, kHogPid);  // preempted, runnable
    sw(5050, kHogPid, 0, kServer);
  }
}

}  // namespace

TEST_CASE("api wait: per request and in percentiles; api_server_busy names the server thread that was on CPU") {
  Db db([](StoreWriter& w) { busy_api_db(w, true); });
  const json d = db.ask(Metric::ttft, 0.9);
  const json& r = d["requests"];
  CAPTURE(r.dump());
  CHECK(r["count"] == 40);
  CHECK(r["api_wait_ms"]["max"].get<double>() == doctest::Approx(30));
  CHECK(r["api_wait_ms"]["p50"].get<double>() == doctest::Approx(0.2));
  REQUIRE(!r["slowest"].empty());
  const json& s = r["slowest"][0];
  CHECK(s["request_id"].get<std::string>().rfind("b", 0) == 0);
  CHECK(s["api_wait_ms"].get<double>() == doctest::Approx(30));
  CHECK(s["read_end_ns"].get<int64_t>() > s["start_ns"].get<int64_t>());
  const json* c = cause(r["tail"], "api_server_busy");
  REQUIRE(c != nullptr);
  CHECK((*c)["requests"] == 5);
  CHECK((*c)["culprit"]["pid"] == kServer);
  CHECK((*c)["culprit"]["tid"] == kServer);
  CHECK((*c)["culprit"]["comm"] == "uvloop-main");
  CHECK((*c)["culprit"]["on_cpu_ms"].get<double>() == doctest::Approx(30));
  CHECK(cause(r["tail"], "cpu_contention") == nullptr);
  bool in_slowest = false;
  for (const json& sc : s["causes"]) in_slowest |= sc["cause"] == "api_server_busy";
  CHECK(in_slowest);
  const std::string text = request_latency_text(d);
  CAPTURE(text);
  CHECK(text.find("API wait p50 0.2") != std::string::npos);
  CHECK(text.find("api_server_busy") != std::string::npos);
}

TEST_CASE("api wait: a server thread runnable but off CPU is cpu_contention's, not api_server_busy") {
  Db db([](StoreWriter& w) { busy_api_db(w, false); });
  const json r = db.ask(Metric::ttft, 0.9)["requests"];
  CAPTURE(r["tail"].dump());
  CHECK(cause(r["tail"], "api_server_busy") == nullptr);
  const json* c = cause(r["tail"], "cpu_contention");
  REQUIRE(c != nullptr);
  CHECK((*c)["culprit"]["pid"] == kHogPid);
}
