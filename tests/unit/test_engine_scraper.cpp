// Engine metrics scraping (docs/INFERENCE.md "Engine metrics"): the bounded HTTP/1.0 GET
// against real local sockets that answer well, badly, slowly or too much, and the scraper
// thread end to end against a vLLM-shaped endpoint.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>
#include <thread>

#include "collector/endpoint.h"
#include "collector/engine_scraper.h"
#include "collector/http_get.h"
#include "collector/netns.h"
#include "collector/servers.h"
#include "collector/sock_decode.h"

using namespace causeway;
using namespace causeway::collector;

namespace {

// A listener on `ip` (127.0.0.1 unless said) that answers every connection with `reply`
// (after `delay_ms`), then closes it. Counts the connections it served.
class CannedServer {
 public:
  CannedServer(std::string reply, int delay_ms = 0, const char* ip = "127.0.0.1")
      : reply_(std::move(reply)), delay_ms_(delay_ms) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    REQUIRE(::inet_pton(AF_INET, ip, &a.sin_addr) == 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    REQUIRE(::listen(fd_, 16) == 0);
    thread_ = std::thread([this] {
      while (true) {
        sockaddr_in peer{};
        socklen_t pl = sizeof(peer);
        const int c = ::accept(fd_, reinterpret_cast<sockaddr*>(&peer), &pl);
        if (c < 0 || stop_) {
          if (c >= 0) ::close(c);
          return;
        }
        last_peer_port_ = ntohs(peer.sin_port);
        char buf[4096];
        (void)::recv(c, buf, sizeof(buf), 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
        size_t off = 0;
        while (off < reply_.size()) {
          const ssize_t n = ::send(c, reply_.data() + off, reply_.size() - off, MSG_NOSIGNAL);
          if (n <= 0) break;
          off += static_cast<size_t>(n);
        }
        ++served_;  // before the close the client reads to
        ::close(c);
      }
    });
  }
  ~CannedServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  int served() const { return served_; }
  uint16_t last_peer_port() const { return last_peer_port_; }

 private:
  std::string reply_;
  int delay_ms_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::atomic<uint16_t> last_peer_port_{0};
  std::thread thread_;
};

std::string ok(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

const char* kVllmBody =
    "# TYPE vllm:num_requests_waiting gauge\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 4.0\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.97\n"
    "python_gc_objects_collected_total{generation=\"0\"} 12.0\n";

Endpoint loopback(uint16_t port) {
  Endpoint out;
  out.family = AF_INET;
  out.addr = {127, 0, 0, 1};
  out.port = port;
  return out;
}

}  // namespace

TEST_CASE("http_response_body: a 200's body, cut to Content-Length; anything else an error") {
  CHECK(*http_response_body(ok("a 1\n")) == "a 1\n");
  CHECK(*http_response_body("HTTP/1.0 200 OK\r\n\r\nuntil close") == "until close");
  CHECK(*http_response_body("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef") == "abc");
  CHECK(http_response_body("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").error().message == "status 404");
  CHECK_FALSE(http_response_body("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));      // cut short
  CHECK_FALSE(http_response_body("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nabc"));      // bad length
  CHECK_FALSE(http_response_body("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999\r\n\r\n"));
  CHECK_FALSE(http_response_body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
  CHECK_FALSE(http_response_body("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"));
  CHECK_FALSE(http_response_body("SSH-2.0-OpenSSH_9.2\r\n\r\n"));
  CHECK_FALSE(http_response_body("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"));  // no end of head
  CHECK_FALSE(http_response_body(std::string(20000, 'x') + "\r\n\r\n"));
  CHECK_FALSE(http_response_body(""));
}

TEST_CASE("http_get: real sockets; refused, slow and oversized answers are bounded errors") {
  const uint32_t self = static_cast<uint32_t>(::getpid());
  CannedServer good(ok(kVllmBody));
  // Told our end before connecting (the server cannot have accepted yet), and again before
  // the close: the exact tuple the server accepted.
  struct Seen {
    Endpoint server, opened, closed;
    int served_at_open = -1;
    bool answered = false;
    const CannedServer* srv = nullptr;
  } seen;
  seen.srv = &good;
  HttpGetOptions o;
  o.on_open = [](void* ctx, const Endpoint& server, const Endpoint& e) {
    auto* x = static_cast<Seen*>(ctx);
    x->server = server;
    x->opened = e;
    x->served_at_open = x->srv->served();
  };
  o.on_close = [](void* ctx, const Endpoint&, const Endpoint& e, bool answered) {
    static_cast<Seen*>(ctx)->closed = e;
    static_cast<Seen*>(ctx)->answered = answered;
  };
  o.ctx = &seen;
  auto r = http_get(self, loopback(good.port()), "/metrics", o);
  REQUIRE(r);
  CHECK(*r == kVllmBody);
  CHECK(seen.served_at_open == 0);
  CHECK(seen.server == loopback(good.port()));
  CHECK(seen.opened.port == good.last_peer_port());
  CHECK(seen.opened.text() == "127.0.0.1:" + std::to_string(good.last_peer_port()));
  CHECK(seen.closed == seen.opened);
  CHECK(seen.answered);

  CannedServer slow(ok("x 1\n"), 1500);
  HttpGetOptions quick;
  quick.deadline_ns = 200'000'000;
  const auto t0 = std::chrono::steady_clock::now();
  auto s = http_get(self, loopback(slow.port()), "/metrics", quick);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1000));
  REQUIRE_FALSE(s);
  CHECK(s.error().code == "timeout");
  // Timed out: told as not answered (the server may still accept it from its backlog).
  Seen late;
  late.srv = &slow;
  HttpGetOptions quick_told = quick;
  quick_told.on_open = o.on_open;
  quick_told.on_close = o.on_close;
  quick_told.ctx = &late;
  late.answered = true;
  REQUIRE_FALSE(http_get(self, loopback(slow.port()), "/metrics", quick_told));
  CHECK(late.closed == late.opened);
  CHECK_FALSE(late.answered);

  CannedServer huge(ok(std::string(3u << 20, 'y')));
  HttpGetOptions capped;
  capped.max_bytes = 1u << 20;
  auto h = http_get(self, loopback(huge.port()), "/metrics", capped);
  REQUIRE_FALSE(h);
  CHECK(h.error().code == "too_large");

  uint16_t closed_port;
  {
    CannedServer gone("");
    closed_port = gone.port();
  }
  auto c = http_get(self, loopback(closed_port), "/metrics", HttpGetOptions{});
  REQUIRE_FALSE(c);
  CHECK(c.error().code == "connect");
}

TEST_CASE("EngineScraper: samples a vLLM-shaped endpoint each interval, keeps vLLM's series, tells its connections while open") {
  CannedServer vllm(ok(kVllmBody));
  CannedServer junk(ok("\x16\x03\x01 binary \xff\xfe garbage\n"));
  std::mutex mu;
  std::vector<std::pair<bool, cw_sock_conn>> told;  // (open, key)
  OwnConnections own;
  own.open = [&](const cw_sock_conn& k) {
    std::lock_guard lk(mu);
    told.push_back({true, k});
  };
  own.close = [&](const cw_sock_conn& k) {
    std::lock_guard lk(mu);
    told.push_back({false, k});
  };
  EngineScraper s(100'000'000, own);
  s.add(::getpid(), loopback(vllm.port()));
  s.add(1, loopback(junk.port()));  // pid 1's command line names no engine; its answer has no samples
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  s.stop();
  const int served = vllm.served();
  auto recs = s.take();
  REQUIRE(recs.size() >= 3);
  CHECK(static_cast<int>(recs.size()) == served);
  for (const auto& r : recs) {
    CHECK(r.pid == static_cast<uint32_t>(::getpid()));
    CHECK(r.engine == "vllm");  // from the metric names: this test's command line names none
    CHECK(r.url == "http://127.0.0.1:" + std::to_string(vllm.port()) + "/metrics");
    REQUIRE(r.samples.size() == 2);  // python_gc_* is not vLLM's
    CHECK(r.samples[0].name == "vllm:num_requests_waiting");
    CHECK(r.samples[0].value == 4.0);
    CHECK(r.samples[1].value == doctest::Approx(0.97));
  }
  CHECK(recs.back().ts_ns > recs.front().ts_ns);
  const ScraperCounters c = s.counters();
  CHECK(c.scrapes == recs.size());
  CHECK(c.failures >= 3);  // the junk endpoint, every round
  // Every connection told open then closed, with the server side's tuple in its namespace.
  std::lock_guard lk(mu);
  REQUIRE(told.size() == 2 * c.connections);
  CHECK(c.connections >= recs.size());
  bool saw_last = false;
  for (size_t i = 0; i + 1 < told.size(); i += 2) {
    CHECK(told[i].first);
    CHECK_FALSE(told[i + 1].first);
    CHECK(std::memcmp(&told[i].second, &told[i + 1].second, sizeof(cw_sock_conn)) == 0);
    const cw_sock_conn& k = told[i].second;
    CHECK(k.netns == net_namespace_of(static_cast<uint32_t>(::getpid())));
    CHECK(conn_local(k)->text().rfind("127.0.0.1:", 0) == 0);
    if (k.local_port == vllm.port() && k.peer_port == vllm.last_peer_port()) saw_last = true;
  }
  CHECK(saw_last);
  CHECK(vllm.served() == served);  // stopped: no scrape after stop()
}

TEST_CASE("Endpoint: /proc/net/tcp{,6} addresses, wildcards reach loopback, text as requests store peers") {
  // Little-endian hosts print each 32-bit word of the address as a native integer.
  auto v4 = endpoint_from_proc_net("0200007F:1F90");
  REQUIRE(v4);
  CHECK(v4->text() == "127.0.0.2:8080");
  CHECK_FALSE(v4->is_wildcard());
  CHECK(v4->reachable() == *v4);
  auto any4 = endpoint_from_proc_net("00000000:0050");
  REQUIRE(any4);
  CHECK(any4->is_wildcard());
  CHECK(any4->reachable().text() == "127.0.0.1:80");
  auto any6 = endpoint_from_proc_net("00000000000000000000000000000000:1F40");
  REQUIRE(any6);
  CHECK(any6->reachable().text() == "[::1]:8000");
  auto mapped = endpoint_from_proc_net("0000000000000000FFFF00000100000A:1F40");  // ::ffff:10.0.0.1
  REQUIRE(mapped);
  CHECK(mapped->text() == "10.0.0.1:8000");
  CHECK_FALSE(endpoint_from_proc_net("0100007F"));
  CHECK_FALSE(endpoint_from_proc_net("0100007:1F90"));
  CHECK_FALSE(endpoint_from_proc_net("0100007F:1FFFFF"));
  CHECK_FALSE(endpoint_from_proc_net("zz00007F:1F90"));
  const auto listeners = parse_listeners(
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0200007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1\n"
      "   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4343 1\n");
  REQUIRE(listeners.size() == 1);  // the second is an established connection
  CHECK(listeners[0].first == 4242);
  CHECK(listeners[0].second.text() == "127.0.0.2:8080");
}

TEST_CASE("a server listening on one address only (127.0.0.2) is found there and scraped there") {
  CannedServer vllm(ok(kVllmBody), 0, "127.0.0.2");
  const uint32_t self = static_cast<uint32_t>(::getpid());
  // self = 0: this test process is the server to find.
  const auto servers = find_servers({self}, {}, 0);
  const auto it = std::find_if(servers.begin(), servers.end(), [&](const Server& s) { return s.port == vllm.port(); });
  REQUIRE(it != servers.end());
  CHECK(it->pid == self);
  CHECK(it->listen.text() == "127.0.0.2:" + std::to_string(vllm.port()));
  CHECK(it->netns == net_namespace_of(self));  // the kernel side keys its listening ports by it
  EngineScraper s(100'000'000);
  s.add(self, it->listen);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  s.stop();
  auto recs = s.take();
  REQUIRE(recs.size() >= 2);
  CHECK(recs[0].url == "http://127.0.0.2:" + std::to_string(vllm.port()) + "/metrics");
  CHECK(s.counters().connections >= recs.size());
}
