// `network` keyed to requests (docs/INFERENCE.md "Causes keyed to requests"): the send-buffer
// waits the collector makes of socket records (requests/send_waits.h), and the claim on a
// request's own connection from rows written by the real writer to a real SQLite file.
#include <doctest/doctest.h>

#include "bpf/events.h"
#include "diagnosis/request_latency.h"
#include "diagnosis/request_chains.h"
#include "requests/send_waits.h"
#include "requests/to_record.h"
#include "requests/tracker.h"
#include "tests/unit/request_db.h"
#include "tests/unit/request_rows.h"

using namespace causeway;
using namespace causeway::requests;
using json = nlohmann::json;

namespace {

SockRecord sock_rec(SockOp op, int64_t ts, int32_t fd, uint32_t tid = 7) {
  SockRecord r;
  r.ts_ns = ts;
  r.pid = 100;
  r.tid = tid;
  r.fd = fd;
  r.op = op;
  return r;
}

SockRecord write_rec(int64_t ts, int32_t fd, uint64_t bytes, SendResult send, int64_t enter, uint32_t tid = 7) {
  SockRecord r = sock_rec(SockOp::write, ts, fd, tid);
  r.bytes = bytes;
  r.send = send;
  r.enter_ns = enter;
  return r;
}

}  // namespace

TEST_CASE("send waits: from the first EAGAIN or short write to the next whole write, per connection") {
  SendWaits s;
  s.add(write_rec(1000, 5, 300, SendResult::ok, 990));
  CHECK(s.take().empty());  // whole writes wait for nothing
  // fd 5: a short writev (two records of one syscall), an EAGAIN, then a whole write.
  s.add(write_rec(2000, 5, 100, SendResult::short_write, 1990));
  s.add(write_rec(2000, 5, 60, SendResult::short_write, 1990));
  s.add(write_rec(2500, 5, 0, SendResult::eagain, 2490));
  // fd 6 meanwhile: a short write, and the connection closes with its response still queued.
  s.add(write_rec(2600, 6, 10, SendResult::short_write, 2590));
  CHECK(s.take().empty());
  s.add(write_rec(9000, 5, 4000, SendResult::ok, 8990));
  s.add(sock_rec(SockOp::close, 9500, 6));
  auto w = s.take();
  REQUIRE(w.size() == 2);
  CHECK(w[0].fd == 5);
  CHECK(w[0].start_ns == 2000);
  CHECK(w[0].end_ns == 9000);
  CHECK(w[0].short_writes == 1);  // one syscall, not one per iovec
  CHECK(w[0].eagain == 1);
  CHECK_FALSE(w[0].blocking);
  CHECK(w[1].fd == 6);
  CHECK(w[1].end_ns == 9500);

  // A blocking write that took 5 ms is a wait of its own, over the syscall, counted once.
  s.add(write_rec(20'000'000, 7, 64, SendResult::ok, 15'000'000, 9));
  s.add(write_rec(20'000'000, 7, 64, SendResult::ok, 15'000'000, 9));
  // One still open at the end of the trace ends at the last record seen.
  s.add(write_rec(21'000'000, 8, 1, SendResult::short_write, 20'999'000));
  s.add(write_rec(22'000'000, 9, 1, SendResult::ok, 21'999'000));
  s.finish();
  w = s.take();
  REQUIRE(w.size() == 2);
  CHECK(w[0].blocking);
  CHECK(w[0].tid == 9);
  CHECK(w[0].start_ns == 15'000'000);
  CHECK(w[0].end_ns == 20'000'000);
  CHECK(w[1].fd == 8);
  CHECK(w[1].end_ns == 22'000'000);

  const CallRecord c = send_wait_record(w[1]);
  CHECK(c.op == CW_OP_SOCK_SEND_WAIT);
  CHECK(c.ts_ns == 21'000'000);
  CHECK(c.dur_ns == 1'000'000);
  CHECK(c.a[0] == 8);
  CHECK(c.a[2] == 1);
}

TEST_CASE("the tracker takes an EAGAIN record (no bytes) for nothing: the stream's tokens are unchanged") {
  Tracker t;
  t.add(sock_rec(SockOp::accept, 1, 5));
  const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: n1\r\nContent-Length: 2\r\n\r\n{}";
  SockRecord rd = sock_rec(SockOp::read, 10, 5);
  rd.bytes = req.size();
  rd.data = req;
  t.add(rd);
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 32\r\n\r\n";
  const std::string ev = "data: a\n\n";
  auto wr = [&](int64_t ts, const std::string& d, SendResult s) {
    SockRecord r = write_rec(ts, 5, s == SendResult::eagain ? 0 : d.size(), s, ts - 1);
    if (s != SendResult::eagain) r.data = d;
    t.add(r);
  };
  wr(20, head, SendResult::ok);
  wr(30, ev, SendResult::ok);
  wr(35, ev, SendResult::eagain);
  wr(40, ev, SendResult::ok);
  wr(50, "data: [DONE]\n\n", SendResult::ok);
  auto done = t.take();
  REQUIRE(done.size() == 1);
  CHECK(done[0].request_id == "n1");
  CHECK(done[0].token_ns == std::vector<int64_t>{30, 40});
  CHECK(done[0].complete);
}

namespace {

// 95 quick streams (fd 5), and five on connections of their own (fd 10 + i, client
// 10.0.0.9:4000i) whose second token gap (5941 → 6441 ms) took 500 ms instead of 20.
void five_slow(StoreWriter& w) {
  w.push_meta(ProcessRecord{.pid = 100, .ppid = 1, .comm = "python3"});
  w.push_meta(ProcessRecord{.pid = 101, .ppid = 100, .comm = "EngineCore"});
  for (int i = 0; i < 95; ++i) w.push_meta(to_record(streamed("r" + std::to_string(i), i * 50, 20, 4, 20, "t")));
  for (int i = 0; i < 5; ++i) {
    Request r = streamed("p" + std::to_string(i), 5900, 20, 4, 20, "t");
    for (size_t k = 2; k < r.token_ns.size(); ++k) r.token_ns[k] += 480 * kMs;
    r.last_byte_ns = r.token_ns.back() + kMs;
    r.fd = 10 + i;
    r.peer = "10.0.0.9:4000" + std::to_string(i);
    w.push_meta(to_record(r));
  }
}

CallRecord send_wait(int32_t fd, int64_t from_ms, int64_t to_ms, bool blocking = false, uint32_t tid = 100) {
  SendWait s{100, tid, fd, kT0 + from_ms * kMs, kT0 + to_ms * kMs, 0, 3, blocking};
  return send_wait_record(s);
}

SwitchRecord switch_at(int64_t ms, uint32_t prev, int64_t prev_state, uint32_t next) {
  SwitchRecord s;
  s.ts_ns = kT0 + ms * kMs;
  s.prev_tid = s.prev_pid = prev;
  s.prev_state = prev_state;
  s.next_tid = s.next_pid = next;
  return s;
}

// The ITL tail (p99) of five_slow plus what `fill` pushes.
template <typename F>
json itl_requests(F fill) {
  Db db([&](StoreWriter& w) {
    five_slow(w);
    fill(w);
  });
  return db.ask(Metric::itl, 0.99)["requests"];
}


}  // namespace

TEST_CASE("network: a request's token gap while its own connection's send buffer was full, with the peer") {
  const json d = itl_requests([](StoreWriter& w) {
    w.push_wait(send_wait(10, 5945, 6395));  // p0: 450 ms of the 480 above the median
    w.push_wait(send_wait(11, 5945, 6395));  // p1: the same, on a lossy link
    CallRecord rt;
    rt.op = CW_OP_TCP_RETRANSMIT;
    rt.ts_ns = kT0 + 6000 * kMs;
    rt.a = {0x7f000001, 8000, 0x0a000009, 40001, 1, 0};  // 127.0.0.1:8000 → 10.0.0.9:40001
    w.push_wait(rt);
    rt.a[3] = 49999;  // another connection's: not p1's
    w.push_wait(rt);
    w.push_wait(send_wait(14, 1000, 1100));  // fd 14 long before p4's gap: not its wait
  });
  const json& tail = d["tail"];
  CAPTURE(tail.dump());
  const json* n = cause(tail, "network");
  REQUIRE(n != nullptr);
  CHECK((*n)["requests"] == 2);
  CHECK((*n)["share_time"].get<double>() == doctest::Approx(900.0 / 2400).epsilon(0.02));
  const json& k = (*n)["culprit"];
  CHECK(k["pid"] == 100);
  CHECK(k["comm"] == "python3");
  CHECK((k["peer"] == "10.0.0.9:40000" || k["peer"] == "10.0.0.9:40001"));
  CHECK(k["short_writes"] == 3);
  CHECK(k["eagain"] == 0);
  CHECK(k["blocked_writes"] == 0);
  bool lossy_seen = false;
  for (const auto& s : d["slowest"]) {
    if (s["request_id"] == "p1") {
      REQUIRE(!s["causes"].empty());
      CHECK(s["causes"][0]["cause"] == "network");
      CHECK(s["causes"][0]["lost_ms"].get<double>() == doctest::Approx(450).epsilon(0.01));
      CHECK(s["causes"][0]["culprit"]["peer"] == "10.0.0.9:40001");
      CHECK(s["causes"][0]["culprit"]["retransmits"] == 1);
      lossy_seen = true;
    }
    if (s["request_id"] == "p0") CHECK(s["causes"][0]["culprit"]["retransmits"] == 0);
    if (s["request_id"] == "p4" || s["request_id"].get<std::string>()[0] == 'r') CHECK(cause(s, "network") == nullptr);
  }
  CHECK(lossy_seen);
  const std::string text = request_latency_text(json{{"requests", d}, {"engines", json::array()}});
  CHECK(text.find("network: 37.5% of the tail's time above the median, 2 requests, culprit pid 100 (python3), client 10.0.0.9:4000") !=
        std::string::npos);
}

TEST_CASE("network: taken first, the other causes share what it leaves of the excess") {
  const json d = itl_requests([](StoreWriter& w) {
    w.push_meta(ProcessRecord{.pid = 900, .ppid = 1, .comm = "tar"});
    // tar holds the engine core's CPU across all five gaps: cpu_contention 480 ms each.
    w.push_wait(switch_at(5941, 101, 0, 900));
    w.push_wait(switch_at(6441, 900, 0, 101));
    w.push_wait(send_wait(10, 5945, 6395));  // p0's connection also waited 450 ms
  });
  CAPTURE(d["tail"].dump());
  for (const auto& s : d["slowest"]) {
    if (s["request_id"] != "p0") continue;
    REQUIRE(s["causes"].size() == 2);
    CHECK(s["causes"][0]["cause"] == "network");
    CHECK(s["causes"][0]["lost_ms"].get<double>() == doctest::Approx(450).epsilon(0.01));
    CHECK(s["causes"][1]["cause"] == "cpu_contention");
    CHECK(s["causes"][1]["lost_ms"].get<double>() == doctest::Approx(30).epsilon(0.02));  // 480 - 450
  }
  const json* cpu = cause(d["tail"], "cpu_contention");
  const json* net = cause(d["tail"], "network");
  REQUIRE(cpu != nullptr);
  REQUIRE(net != nullptr);
  // 4 × 480 + 30 of cpu, 450 of network: together the tail's 2400 ms above the median, once.
  CHECK((*cpu)["share_time"].get<double>() == doctest::Approx(1950.0 / 2400).epsilon(0.02));
  CHECK((*cpu)["share_time"].get<double>() + (*net)["share_time"].get<double>() <= 1.001);
}

TEST_CASE("network: a blocking write counts the time its thread slept in it, not a preemption") {
  const json d = itl_requests([](StoreWriter& w) {
    // p0's write (server thread 100) slept 400 ms in the send path; p1's (thread 102) was
    // preempted, never asleep; p2's came after its gap.
    w.push_wait(send_wait(10, 5942, 6440, true));
    w.push_wait(switch_at(5960, 100, 1, 0));  // S: waiting for room
    w.push_wait(WakeupRecord{.ts_ns = kT0 + 6360 * kMs, .tid = 100, .pid = 100});
    w.push_wait(switch_at(6360, 0, 0, 100));
    w.push_wait(send_wait(11, 5942, 6440, true, 102));
    w.push_wait(switch_at(5950, 102, 0, 0));
    w.push_wait(switch_at(6300, 0, 0, 102));
    w.push_wait(send_wait(12, 7000, 7300, true));
  });
  CAPTURE(d["tail"].dump());
  const json* n = cause(d["tail"], "network");
  REQUIRE(n != nullptr);
  CHECK((*n)["requests"] == 1);
  CHECK((*n)["culprit"]["peer"] == "10.0.0.9:40000");
  CHECK((*n)["culprit"]["blocked_writes"] == 1);
  CHECK((*n)["share_time"].get<double>() == doctest::Approx(400.0 / 2400).epsilon(0.02));
}

TEST_CASE("network: a request chain naming the peer, with the fix for a client that does not read") {
  Db db([](StoreWriter& w) {
    five_slow(w);
    for (int i = 0; i < 5; ++i) w.push_wait(send_wait(10 + i, 5942, 6440));
  });
  auto h = open_read_only(db.path);
  REQUIRE(h);
  const json chains = request_chain_docs(h->get());
  CAPTURE(chains.dump());
  REQUIRE(!chains.empty());
  CHECK(chains[0]["cause"] == "network");
  CHECK(chains[0]["severity"] == "HIGH");
  CHECK(chains[0]["culprit"]["peer"].get<std::string>().rfind("10.0.0.9:4000", 0) == 0);
  CHECK(chains[0]["summary"].get<std::string>().find("waited on a full send buffer") != std::string::npos);
  CHECK(chains[0]["recommendation"].get<std::string>().find("does not read") != std::string::npos);
  CHECK(chains[0]["requests"].size() == 5);
}
