// requests/tracker: HTTP/1.1 + SSE reassembly on byte streams shaped like what the kernel
// side captures (a bounded prefix of each syscall plus its byte count).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "requests/http_head.h"
#include "requests/tracker.h"
#include "tests/unit/request_feed.h"

using namespace causeway::requests;
using namespace causeway::requests::test_feed;

TEST_CASE("a streamed completion: TTFT from the request's last read to the first data event; [DONE] is no token") {
  Feed f;
  f.accept(7);
  f.read(7, post("/v1/completions?x=1", R"({"prompt":"hi","stream":true})", "X-Request-Id: req-1\r\nX-Tenant: acme\r\n"), 100);
  f.write(7, kSseHead, 150);
  for (int i = 0; i < 5; ++i) f.write(7, chunk(event(i)), 1000 + i * 100);
  f.write(7, chunk("data: [DONE]\n\n"), 2000);
  f.write(7, "0\r\n\r\n", 2001);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  const Request& q = rs[0];
  CHECK(q.request_id == "req-1");
  CHECK_FALSE(q.id_generated);
  CHECK(q.method == "POST");
  CHECK(q.path == "/v1/completions");
  CHECK(q.tenant == "acme");
  CHECK(q.status == 200);
  CHECK(q.streamed);
  CHECK(q.complete);
  CHECK(q.start_ns == 100);
  CHECK(q.end_ns == 100);
  CHECK(q.first_byte_ns == 150);
  CHECK(q.last_byte_ns == 2001);
  CHECK(q.prompt_bytes == std::string(R"({"prompt":"hi","stream":true})").size());
  CHECK(q.token_ns == std::vector<int64_t>{1000, 1100, 1200, 1300, 1400});
}

TEST_CASE("keep-alive: two requests in a row on one connection, a body spread over reads") {
  Feed f;
  f.accept(8);
  const std::string body(3000, 'a');  // longer than one copy: followed by count
  const std::string req = post("/v1/completions", body);
  f.read(8, req.substr(0, 1500), 10);
  f.read(8, req.substr(1500), 20);
  f.write(8, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 30);
  f.read(8, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 40);
  f.write(8, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", 50);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].start_ns == 10);
  CHECK(rs[0].end_ns == 20);
  CHECK(rs[0].prompt_bytes == 3000);
  CHECK(rs[0].first_byte_ns == 30);
  CHECK(rs[0].response_bytes == 5);
  CHECK(rs[0].complete);
  CHECK_FALSE(rs[0].streamed);
  CHECK(rs[0].tenant == "10.1.2.3");  // no tenant header: the peer's address
  CHECK(rs[0].id_generated);
  CHECK(rs[1].path == "/health");
  CHECK(rs[1].status == 503);
  CHECK(rs[1].request_id != rs[0].request_id);
  CHECK(f.t.counters().requests == 2);
}

TEST_CASE("pipelined requests in one read are answered in order") {
  Feed f;
  f.accept(9);
  f.read(9, post("/a", "1", "X-Request-Id: a\r\n") + post("/b", "22", "X-Request-Id: b\r\n"), 5);
  f.write(9, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA", 6);
  f.write(9, "HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nB", 7);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].request_id == "a");
  CHECK(rs[0].status == 200);
  CHECK(rs[1].request_id == "b");
  CHECK(rs[1].status == 201);
  CHECK(rs[1].prompt_bytes == 2);
}

TEST_CASE("concurrent connections interleave without mixing") {
  Feed f;
  f.accept(10);
  f.accept(11);
  f.read(10, post("/v1/completions", "{}", "X-Request-Id: one\r\n"), 1);
  f.read(11, post("/v1/completions", "{}", "X-Request-Id: two\r\n"), 2);
  f.write(11, kSseHead, 3);
  f.write(10, kSseHead, 4);
  f.write(10, chunk(event(0)), 5);
  f.write(11, chunk(event(0)), 6);
  f.write(11, chunk(event(1)), 7);
  f.write(10, "0\r\n\r\n", 8);
  f.write(11, "0\r\n\r\n", 9);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].request_id == "one");
  CHECK(rs[0].token_ns == std::vector<int64_t>{5});
  CHECK(rs[1].request_id == "two");
  CHECK(rs[1].token_ns == std::vector<int64_t>{6, 7});
}

TEST_CASE("several events in one write, an event split over writes, data lines out of sight") {
  Feed f;
  f.accept(12);
  f.read(12, post("/v1/completions", "{}"), 1);
  f.write(12, kSseHead, 2);
  f.write(12, chunk(event(0) + event(1)), 3);  // two tokens at one time
  const std::string e = event(2);
  f.write(12, chunk(e.substr(0, 3)), 4);       // "dat" ...
  f.write(12, chunk(e.substr(3)), 5);          // ... "a: {...}": the token is where its line starts to be decided
  f.write(12, chunk(std::string(2000, 'x') + "\n\n" + event(3)), 6);  // a long comment-less line, then an event out of the copy
  f.write(12, chunk(event(4)), 7);             // a fresh write resynchronises
  f.write(12, "0\r\n\r\n", 8);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].token_ns == std::vector<int64_t>{3, 3, 5, 7});
  CHECK(rs[0].complete);
}

TEST_CASE("a stalled stream flushed in one write of many chunks: every chunk header is seen, every token counted") {
  // aiohttp keeps the events made while the socket was full and sends them in one write:
  // 120 chunks of ~117 bytes, 14 KiB, most chunk-size lines far beyond the first record.
  Feed f;
  stream_begun(f, 13, "stalled");
  const std::string flush = chunks(1, 120);
  REQUIRE(flush.size() > 12 * kCap);
  f.pieces(13, SockOp::write, flush, 9);
  f.pieces(13, SockOp::write, chunk(event(121)) + chunk("data: [DONE]\n\n") + "0\r\n\r\n", 10);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].request_id == "stalled");
  std::vector<int64_t> want{2};
  want.insert(want.end(), 120, 9);
  want.push_back(10);
  CHECK(rs[0].token_ns == want);
  CHECK(rs[0].complete);
  size_t body = std::string("data: [DONE]\n\n").size();
  for (int i = 0; i <= 121; ++i) body += event(i).size();
  CHECK(rs[0].response_bytes == body);
  CHECK(f.t.counters().desync == 0);
  CHECK(f.t.counters().sse_unseen == 0);
  // The same many pipelined requests in one read of 20 KiB.
  std::string reads;
  for (int i = 0; i < 60; ++i) reads += post("/v1/completions", std::string(200, 'p'), "X-Request-Id: p" + std::to_string(i) + "\r\n");
  f.pieces(13, SockOp::read, reads, 20);
  for (int i = 0; i < 60; ++i) f.pieces(13, SockOp::write, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 21 + i);
  rs = f.t.take();
  REQUIRE(rs.size() == 60);
  CHECK((rs[59].request_id == "p59" && rs[59].prompt_bytes == 200 && rs[59].complete));
  CHECK(f.t.counters().desync == 0);
}

TEST_CASE("bytes not copied: skipped by count where the framing says where the next header is") {
  Feed f;
  stream_begun(f, 14, "skip");
  // Events of 2999 bytes in chunks of 3006: a piece the ring had no room for (piece 4,
  // bytes [4096, 5120)) lies inside chunk 1's data, whose data line began in piece 2 (its
  // token is counted there): skipped by count, the chunks after it are read.
  const std::string big = "data: {\"text\":\"" + std::string(2980, 'x') + "\"}\n\n";
  f.pieces(14, SockOp::write, chunk(big) + chunk(big) + chunk(big) + chunk(big), 3, {4});
  // Past the per-syscall copy (64 KiB): three chunks of 30 KiB, the third's header seen at
  // ~60 KiB, its data and CRLF reached by count; the next syscall starts with a chunk header.
  const std::string huge = "data: {\"text\":\"" + std::string(30 * 1024, 'y') + "\"}\n\n";
  const std::string flush = chunk(huge) + chunk(huge) + chunk(huge);
  REQUIRE(flush.size() > kMaxCopy + 20000);
  f.pieces(14, SockOp::write, flush, 4);
  f.pieces(14, SockOp::write, chunk(event(9)) + "0\r\n\r\n", 5);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].complete);
  CHECK(rs[0].token_ns == std::vector<int64_t>{2, 3, 3, 3, 3, 4, 4, 4, 5});
  CHECK(rs[0].response_bytes == event(0).size() + 4 * big.size() + 3 * huge.size() + event(9).size());
  CHECK(f.t.counters().desync == 0);
  CHECK(f.t.counters().sse_unseen == 1);
}

TEST_CASE("framing truly lost: counted, the request's tokens stop there, a syscall's first bytes resynchronise") {
  Feed f;
  stream_begun(f, 15, "cut");
  // 20 chunks of ~112 bytes; piece 1 (chunk-size lines among its bytes) never came: where
  // the next chunk starts is unknown. Piece 2 starts with "HTTP/1." yet mid-syscall: no head.
  std::string flush = chunks(1, 20);
  flush += std::string(3 * kCap - flush.size() - 2, ' ') + "\r\n";  // padding, to piece 2
  flush += "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  f.pieces(15, SockOp::write, flush, 3, {1});
  f.pieces(15, SockOp::write, chunk(event(21)) + "0\r\n\r\n", 4);  // still out of frame
  f.read(15, post("/v1/completions", "{}", "X-Request-Id: next\r\n"), 5);
  f.pieces(15, SockOp::write, kSseHead + chunk(event(0)) + chunk(event(1)) + "0\r\n\r\n", 6);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].request_id == "cut");
  CHECK_FALSE(rs[0].complete);
  // Only the tokens before the loss: the write at 2 and the chunks of piece 0 (8 whole ones
  // and the 9th, whose data line began there); none invented after it.
  std::vector<int64_t> want{2};
  want.insert(want.end(), 9, 3);
  CHECK(rs[0].token_ns == want);
  CHECK(rs[1].request_id == "next");
  CHECK(rs[1].complete);
  CHECK(rs[1].token_ns == std::vector<int64_t>{6, 6});
  CHECK(f.t.counters().desync == 1);
  CHECK(f.t.counters().unmatched_responses == 0);
  // A syscall's last piece lost shows at the next syscall (its total was not reached).
  Feed g;
  stream_begun(g, 16, "tail");
  g.pieces(16, SockOp::write, chunks(1, 12), 3, {1});
  g.pieces(16, SockOp::write, chunk(event(13)) + "0\r\n\r\n", 4);
  rs = g.t.take();
  REQUIRE(rs.size() == 1);
  CHECK_FALSE(rs[0].complete);
  CHECK(g.t.counters().desync == 1);
  CHECK(std::count(rs[0].token_ns.begin(), rs[0].token_ns.end(), 4) == 0);
}

TEST_CASE("TLS, HTTP/2 and other protocols are counted, never parsed") {
  Feed f;
  f.accept(20);
  f.read(20, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + "GET / HTTP/1.1\r\n\r\n", 1);
  f.write(20, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 2);
  f.accept(21);
  f.read(21, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 3);
  f.accept(22);
  f.read(22, "SSH-2.0-OpenSSH_9.2\r\n", 4);
  f.accept(23);
  f.read(23, "GE", 5);  // too little to tell yet
  f.read(23, "T /ok HTTP/1.1\r\n\r\n", 6);
  f.write(23, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 7);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].path == "/ok");
  CHECK(rs[0].start_ns == 5);
  CHECK(f.t.counters().tls == 1);
  CHECK(f.t.counters().http2 == 1);
  CHECK(f.t.counters().non_http == 1);
  CHECK(f.t.counters().unmatched_responses == 0);
}

TEST_CASE("a head longer than the copy is counted and the connection resynchronises on the next request") {
  Feed f;
  f.accept(30);
  f.read(30, post("/big", "{}", "Cookie: " + std::string(3000, 'c') + "\r\n"), 1);
  f.write(30, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 2);  // the dropped request's response
  f.read(30, post("/next", "{}", "X-Request-Id: n\r\n"), 3);
  f.write(30, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 4);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].request_id == "n");
  CHECK(rs[0].first_byte_ns == 4);
  CHECK(f.t.counters().headers_truncated == 1);
}

TEST_CASE("an oversized head (over 16 KiB across reads) is refused and counted") {
  Feed f;
  f.accept(31);
  f.read(31, "GET / HTTP/1.1\r\n", 1);
  for (int i = 0; i < 20; ++i) f.read(31, "X-Pad: " + std::string(1000, 'p') + "\r\n", 2 + i);
  CHECK(f.t.take().empty());
  CHECK(f.t.counters().headers_oversized == 1);
}

TEST_CASE("a client that disconnects mid-stream: the request is kept, incomplete, and counted") {
  Feed f;
  f.accept(40);
  f.read(40, post("/v1/completions", "{}", "X-Request-Id: cut\r\n"), 1);
  f.write(40, kSseHead, 2);
  f.write(40, chunk(event(0)), 3);
  f.close(40, 9);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].request_id == "cut");
  CHECK_FALSE(rs[0].complete);
  CHECK(rs[0].token_ns.size() == 1);
  CHECK(rs[0].last_byte_ns == 3);
  CHECK(f.t.counters().disconnected == 1);
}

TEST_CASE("chunked request bodies, a response running until close, a bad chunk size") {
  Feed f;
  f.accept(50);
  f.read(50, "POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk("abc") + chunk("de") + "0\r\n\r\n", 1);
  f.write(50, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nstream", 2);
  f.write(50, "ing", 3);
  f.close(50, 4);
  f.accept(51);
  f.read(51, "POST /bad HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 5);
  f.write(51, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", 6);
  auto rs = f.t.take();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].prompt_bytes == 5);
  CHECK(rs[0].complete);
  CHECK(rs[0].last_byte_ns == 3);
  CHECK(rs[0].response_bytes == 9);
  CHECK(f.t.counters().desync == 1);
  CHECK(f.t.counters().disconnected == 0);
}

TEST_CASE("random bytes never crash the tracker nor make requests") {
  Feed f;
  uint64_t x = 88172645463325252ull;
  for (int fd = 60; fd < 80; ++fd) {
    f.accept(fd);
    for (int i = 0; i < 50; ++i) {
      std::string b(static_cast<size_t>(x % 1500), '\0');
      for (char& c : b) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        c = static_cast<char>(x);
      }
      f.io(fd, i % 2 ? SockOp::write : SockOp::read, b, i);
    }
    f.close(fd, 100);
  }
  f.t.finish();
  CHECK(f.t.take().empty());
  CHECK(f.t.open_connections() == 0);
}

TEST_CASE("protocol sniffing") {
  CHECK(sniff_protocol("POST /v1 HTTP/1.1") == Protocol::http1);
  CHECK(sniff_protocol("PO") == Protocol::unknown_yet);
  CHECK(sniff_protocol("PRI * HTTP/2.0\r\n") == Protocol::http2);
  CHECK(sniff_protocol(std::string("\x16\x03\x01", 3)) == Protocol::tls);
  CHECK(sniff_protocol("hello") == Protocol::other);
  CHECK(looks_like_request_line("GET /x HTTP/1.1\r\n"));
  CHECK_FALSE(looks_like_request_line("GET /x HTTP/2\r\n"));
  CHECK_FALSE(looks_like_request_line("{\"prompt\": 1}"));
}
