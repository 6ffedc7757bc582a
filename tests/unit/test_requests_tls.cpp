// TLS plaintext (bpf/ssl.bpf.h, docs/INFERENCE.md "TLS"): a connection's plaintext records
// (flag CW_F_SOCK_TLS) replace its ciphertext in the HTTP reassembly; the flag is decoded;
// the libssl a process maps and its SSL_read/SSL_write are found (this test process maps the
// system libssl: it links OpenSSL).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "bpf/events.h"
#include "collector/proc_maps.h"
#include "collector/sock_decode.h"
#include "collector/ssl_attach.h"
#include "collector/tls_servers.h"
#include "requests/tracker.h"

#include <openssl/ssl.h>

using namespace causeway;
using namespace causeway::requests;

namespace {

constexpr uint32_t kTlsPid = 777;

// One record of a connection: ciphertext (tls false) or plaintext (tls true).
SockRecord tls_record(SockOp op, int32_t fd, std::string_view data, int64_t ts, bool tls) {
  SockRecord r;
  r.ts_ns = ts;
  r.pid = kTlsPid;
  r.fd = fd;
  r.op = op;
  r.bytes = data.size();
  r.data = data;
  r.tls = tls;
  return r;
}

const std::string kClientHello = std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + std::string(40, 'r');
const std::string kCipher = std::string("\x17\x03\x03\x00\x40", 5) + std::string(64, 'c');
const std::string kSse = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

std::string sse_chunk(const std::string& s) {
  char n[16];
  std::snprintf(n, sizeof n, "%zx\r\n", s.size());
  return n + s + "\r\n";
}

}  // namespace

TEST_CASE("a TLS connection read as plaintext: its requests come from the plaintext, its ciphertext is skipped") {
  Tracker t;
  SockRecord acc;
  acc.pid = kTlsPid;
  acc.fd = 9;
  acc.op = SockOp::accept;
  acc.peer = "127.0.0.1:4000";
  t.add(acc);
  // The handshake: ciphertext only (SSL_do_handshake is not probed), sniffed as TLS.
  t.add(tls_record(SockOp::read, 9, kClientHello, 10, false));
  t.add(tls_record(SockOp::write, 9, kCipher, 11, false));
  CHECK(t.counters().tls == 1);
  // A request: the socket's read, then SSL_read's plaintext.
  t.add(tls_record(SockOp::read, 9, kCipher, 20, false));
  const std::string req = "GET /v1/stream HTTP/1.1\r\nHost: x\r\nX-Request-Id: tls-1\r\n\r\n";
  t.add(tls_record(SockOp::read, 9, req, 21, true));
  CHECK(t.counters().tls == 0);  // read: no longer unread TLS
  // The response: each SSL_write's plaintext, then the socket's write of its ciphertext.
  const std::string writes[] = {kSse, sse_chunk("data: {\"t\": 1}\n\n"), sse_chunk("data: {\"t\": 2}\n\n"),
                                sse_chunk("data: [DONE]\n\n") + "0\r\n\r\n"};
  int64_t ts = 30;
  for (const std::string& w : writes) {
    t.add(tls_record(SockOp::write, 9, w, ts++, true));
    t.add(tls_record(SockOp::write, 9, kCipher, ts++, false));  // not parsed: would desync the framing
  }
  auto done = t.take();
  REQUIRE(done.size() == 1);
  const Request& q = done[0];
  CHECK(q.tls);
  CHECK(q.request_id == "tls-1");
  CHECK(q.path == "/v1/stream");
  CHECK(q.status == 200);
  CHECK(q.streamed);
  CHECK(q.complete);
  CHECK(q.token_ns == std::vector<int64_t>{32, 34});
  CHECK(q.peer == "127.0.0.1:4000");
  CHECK(t.counters().desync == 0);
  CHECK(t.counters().requests == 1);
}

TEST_CASE("a TLS connection without plaintext (static TLS: Node, Go) stays counted and unparsed") {
  Tracker t;
  t.add(tls_record(SockOp::read, 5, kClientHello, 1, false));
  t.add(tls_record(SockOp::read, 5, kCipher, 2, false));
  t.add(tls_record(SockOp::write, 5, kCipher, 3, false));
  CHECK(t.counters().tls == 1);
  CHECK(t.take().empty());
  // A plain connection beside it is unaffected, tls false.
  const std::string req = "GET /p HTTP/1.1\r\nHost: x\r\n\r\n";
  t.add(tls_record(SockOp::read, 6, req, 4, false));
  t.add(tls_record(SockOp::write, 6, "HTTP/1.1 204 No Content\r\n\r\n", 5, false));
  auto done = t.take();
  REQUIRE(done.size() == 1);
  CHECK_FALSE(done[0].tls);
  CHECK(done[0].status == 204);
}

TEST_CASE("decode_sock: the CW_F_SOCK_TLS flag marks plaintext records") {
  cw_sock_event e;
  std::memset(&e, 0, sizeof(e));
  e.hdr.kind = CW_REC_SOCK;
  e.sock_op = CW_SOCK_READ;
  e.fd = 4;
  e.bytes = 3;
  e.captured = 3;
  std::memcpy(e.data, "GET", 3);
  auto r = collector::decode_sock(&e, CW_SOCK_HDR_BYTES + 3);
  REQUIRE(r);
  CHECK_FALSE(r->tls);
  e.hdr.flags = CW_F_SOCK_TLS;
  r = collector::decode_sock(&e, CW_SOCK_HDR_BYTES + 3);
  REQUIRE(r);
  CHECK(r->tls);
  CHECK(r->data == "GET");
}

TEST_CASE("the libssl this process maps: found, its SSL_read and SSL_write probed, readable") {
  REQUIRE(TLS_method() != nullptr);  // a libssl function: keeps libssl linked and mapped
  const auto maps = collector::read_maps(static_cast<uint32_t>(::getpid()));
  const std::string lib = collector::mapped_libssl(maps);
  REQUIRE_MESSAGE(!lib.empty(), "this test links OpenSSL: libssl.so should be mapped");
  CHECK(lib.find("libssl.so") != std::string::npos);
  auto sites = collector::libssl_sites(lib);
  REQUIRE_MESSAGE(sites, sites.error().message);
  CHECK(sites->functions.size() >= 2);
  CHECK(sites->functions[0] == "SSL_read");
  CHECK(sites->functions[1] == "SSL_write");
  for (const auto& s : sites->sites) CHECK((s.cookie >= 1 && s.cookie <= collector::kSslSetFdCookie));
  // SSL_set_fd binds a socket BIO's SSL object to its fd (bpf/ssl.bpf.h): probed too.
  CHECK(std::find(sites->functions.begin(), sites->functions.end(), "SSL_set_fd") != sites->functions.end());
  const auto t = collector::tls_readability(maps, "");
  CHECK(t.reach == collector::TlsReach::libssl);
  CHECK(t.text.find("readable through") != std::string::npos);
}

TEST_CASE("libssl_sites: a library without SSL_read is not a libssl") {
  const auto maps = collector::read_maps(static_cast<uint32_t>(::getpid()));
  std::string libc;
  for (const auto& m : maps)
    if (m.exec && m.path.find("libc.so") != std::string::npos) libc = m.path;
  REQUIRE(!libc.empty());
  auto sites = collector::libssl_sites(libc);
  REQUIRE_FALSE(sites);
  CHECK(sites.error().message.find("no SSL_read/SSL_write") != std::string::npos);
  // Maps without any libssl: none, said as counted-not-read.
  std::vector<collector::Mapping> none;
  const auto t = collector::tls_readability(none, "");
  CHECK(t.reach == collector::TlsReach::none);
  CHECK(t.text.find("counted, not read") != std::string::npos);
}

TEST_CASE("ssl_stat_name: one collector_stats name per enum cw_ssl_stat, none past it") {
  std::vector<std::string> names;
  for (uint32_t i = 0; i < CW_SSL_STAT__COUNT; ++i) {
    const std::string n = collector::ssl_stat_name(i);
    CHECK(n.rfind("http_tls_", 0) == 0);
    CHECK(std::find(names.begin(), names.end(), n) == names.end());
    names.push_back(n);
  }
  CHECK(std::string(collector::ssl_stat_name(CW_SSL_STAT_NO_CONN)) == "http_tls_no_connection");
  CHECK(std::string(collector::ssl_stat_name(CW_SSL_STAT_CIPHER_SKIPPED)) == "http_tls_cipher_skipped");
  CHECK(std::string(collector::ssl_stat_name(CW_SSL_STAT_ARRIVAL)) == "http_tls_arrival_reads");
  CHECK(std::string(collector::ssl_stat_name(CW_SSL_STAT__COUNT)).empty());
}

TEST_CASE("tls_servers_text: each server with a TLS library said readable or counted, the rest counted") {
  using collector::TlsReach;
  std::vector<collector::TlsServer> servers(4);
  servers[0] = {10, "python3", {8443}, {TlsReach::libssl, "/usr/lib/libssl.so.3", "TLS plaintext readable through x"}};
  servers[1] = {11, "node", {3443, 3444}, {TlsReach::in_executable, "/usr/bin/node", "TLS linked into /usr/bin/node"}};
  servers[2] = {12, "sshd", {22}, {TlsReach::none, "", "no libssl mapped"}};
  servers[3] = {13, "nginx", {443}, {TlsReach::libssl, "/usr/lib/libssl.so.3", "TLS plaintext readable through y"}};
  const std::string all = collector::tls_servers_text(servers, 8);
  CHECK(all == "pid 10 python3 :8443: readable (TLS plaintext readable through x); pid 11 node :3443,:3444: counted, "
               "not read (TLS linked into /usr/bin/node); pid 13 nginx :443: readable (TLS plaintext readable through y); "
               "1 listening process without one");
  const std::string two = collector::tls_servers_text(servers, 2);
  CHECK(two.find("pid 13") == std::string::npos);
  CHECK(two.find("; and 1 more; 1 listening process without one") != std::string::npos);
  CHECK(collector::tls_servers_text({}, 8) == "no listening server maps a TLS library; 0 listening processes without one");
}
