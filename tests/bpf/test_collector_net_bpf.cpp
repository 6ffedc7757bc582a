// TCP retransmits under real eBPF, attributed to the socket's owner: in a fresh network
// namespace whose input path drops a fifth of the packets to the listener (nftables), a
// traced sender (cw_tcp, --pid) sends 4 MiB over [::1] or 127.0.0.1 to an untraced receiver
// process. The kernel retransmits from timers and while handling ACKs, in the context of
// whatever task runs; every retransmit of the sender's connection must still name the sender,
// say so (sock_owner), and carry the peer address:port. Skips (77) without nft.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "bpf/events.h"
#include "tests/bpf/collector_harness.h"
#include "tests/bpf/netns_support.h"

namespace causeway::test {

namespace {

constexpr int kPort = 5201;

std::string S(int64_t v) { return std::to_string(v); }

std::string nft_or_skip() {
  std::string nft = nft_path();
  if (nft.empty()) {
    std::printf("SKIPPED: nft (the nftables package) is needed to drop packets in the test's network namespace\n");
    std::exit(77);
  }
  return nft;
}

// cw_tcp in a new network namespace with lo up and the drop rules loaded; returns its pid.
pid_t spawn_in_lossy_netns(const TempDir& dir, const std::string& nft, int family) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  enter_lossy_netns(nft, dir.file("drop.nft"), kPort, 20);
  const std::string prog = testprog("cw_tcp"), fam = S(family), port = S(kPort), ready = dir.file("tcp.ready"),
                    go = dir.file("tcp.go"), log = dir.file("tcp.log");
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
  }
  ::execl(prog.c_str(), prog.c_str(), "--family", fam.c_str(), "--port", port.c_str(), "--bytes", "4m", "--ready-file",
          ready.c_str(), "--wait-file", go.c_str(), static_cast<char*>(nullptr));
  ::_exit(127);
}

struct Run {
  std::string db;
  pid_t sender = 0;
  std::string log;
};

// One traced transfer; the DB is complete when this returns.
Run traced_transfer(const TempDir& dir, int family) {
  const std::string nft = nft_or_skip();
  Run r;
  r.sender = spawn_in_lossy_netns(dir, nft, family);
  wait_for_file(dir.file("tcp.ready"));
  // Requests on (the default): cw_tcp's receiver listens in the traced tree, so it is a server
  // whose connections are traced, but it never speaks HTTP, so the engine scraper never
  // connects to it (a raw receiver that accepted a scrape first would never read the
  // sender's: "write: Connection reset by peer"). Checked below: no scrape connection made.
  Tracer t(dir, {"--pid", S(r.sender), "--no-stack", "--engine-metrics-interval", "100ms"});
  touch(dir.file("tcp.go"));
  const int rc = wait_exit(r.sender);
  INFO(read_file(dir.file("tcp.log")));
  REQUIRE(rc == 0);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  // The receiver was found as a server (its port told to the kernel side) and never scraped.
  CHECK(q_int(t.db(), "SELECT coalesce(max(value), 0) FROM collector_stats WHERE name = 'engine_scrape_connections'") == 0);
  r.db = t.db();
  r.log = t.log();
  return r;
}

}  // namespace

TEST_CASE("IPv6: every retransmit of the traced sender's connection names the sender and the peer [::1]:port") {
  TempDir dir;
  Run r = traced_transfer(dir, 6);
  INFO(r.log);
  const std::string P = S(r.sender);
  // The sender's socket: peer port kPort (a4 = sport | dport << 16 | state << 32).
  const std::string mine = "FROM events WHERE op_id = " + S(CW_OP_TCP_RETRANSMIT6) + " AND ((a4 >> 16) & 65535) = " +
                           S(kPort);
  const int64_t n = q_int(r.db, "SELECT count(*) " + mine);
  MESSAGE("IPv6 retransmits of the sender's connection: " << n);
  CHECK(n > 0);
  CHECK(q_int(r.db, "SELECT count(*) " + mine + " AND (pid != " + P + " OR tid != " + P + " OR a5 != 1)") == 0);
  // Both ends are ::1 (high half 0, low half 1).
  CHECK(q_int(r.db, "SELECT count(*) " + mine + " AND a0 = 0 AND a1 = 1 AND a2 = 0 AND a3 = 1") == n);
  CHECK(q_text(r.db, "SELECT peer FROM v_tcp_retransmits WHERE pid = " + P + " LIMIT 1") == "[::1]:" + S(kPort));
  CHECK(q_text(r.db, "SELECT family || ' ' || comm || ' ' || sock_owner FROM v_tcp_retransmits WHERE pid = " + P +
                     " LIMIT 1") == "ipv6 cw_tcp_send 1");
  CHECK(q_int(r.db, "SELECT count(*) FROM events WHERE op_id = " + S(CW_OP_TCP_RETRANSMIT) + " AND (a1 = " + S(kPort) +
                        " OR a3 = " + S(kPort) + ")") == 0);
}

TEST_CASE("IPv4: every retransmit of the traced sender's connection names the sender and the peer 127.0.0.1:port") {
  TempDir dir;
  Run r = traced_transfer(dir, 4);
  INFO(r.log);
  const std::string P = S(r.sender);
  const std::string mine = "FROM events WHERE op_id = " + S(CW_OP_TCP_RETRANSMIT) + " AND a3 = " + S(kPort);
  const int64_t n = q_int(r.db, "SELECT count(*) " + mine);
  MESSAGE("IPv4 retransmits of the sender's connection: " << n);
  CHECK(n > 0);
  CHECK(q_int(r.db, "SELECT count(*) " + mine + " AND (pid != " + P + " OR tid != " + P + " OR a5 != 1)") == 0);
  // Addresses are host-order integers: 127.0.0.1 = 0x7f000001.
  CHECK(q_int(r.db, "SELECT count(*) " + mine + " AND a0 = " + S(0x7f000001) + " AND a2 = " + S(0x7f000001)) == n);
  CHECK(q_text(r.db, "SELECT peer FROM v_tcp_retransmits WHERE pid = " + P + " LIMIT 1") == "127.0.0.1:" + S(kPort));
  CHECK(q_text(r.db, "SELECT family || ' ' || sock_owner FROM v_tcp_retransmits WHERE pid = " + P + " LIMIT 1") ==
        "ipv4 1");
}

}  // namespace causeway::test
