// A server in its own network namespace (a container's): found from its own /proc/PID/net
// tables and scraped from inside its namespace (docs/INFERENCE.md "Engine metrics"). Needs
// root (CAP_SYS_ADMIN) for unshare and setns; skipped with the reason otherwise.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "collector/engine_scraper.h"
#include "collector/netns.h"
#include "collector/servers.h"

using namespace causeway::collector;

namespace {

constexpr char kReply[] =
    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"
    "vllm:num_requests_running{model_name=\"m\"} 3.0\n";

// The child: a new network namespace with loopback up, a listener on 127.0.0.1:0 whose port
// goes up the pipe, then every connection answered with kReply until killed.
[[noreturn]] void serve_in_new_namespace(int port_pipe) {
  if (::unshare(CLONE_NEWNET) != 0) _exit(2);
  const int ctl = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (ctl < 0 || ::ioctl(ctl, SIOCGIFFLAGS, &ifr) != 0) _exit(3);
  ifr.ifr_flags |= IFF_UP;
  if (::ioctl(ctl, SIOCSIFFLAGS, &ifr) != 0) _exit(4);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    _exit(5);
  const uint16_t port = ntohs(a.sin_port);
  if (::write(port_pipe, &port, sizeof(port)) != sizeof(port)) _exit(6);
  while (true) {
    const int c = ::accept(fd, nullptr, nullptr);
    if (c < 0) continue;
    char buf[2048];
    (void)::recv(c, buf, sizeof(buf), 0);
    (void)::send(c, kReply, sizeof(kReply) - 1, MSG_NOSIGNAL);
    ::close(c);
  }
}

struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

}  // namespace

TEST_CASE("a server in another network namespace is found and scraped from inside it") {
  if (::geteuid() != 0) {
    std::puts("SKIP: needs root (unshare and setns of a network namespace)");
    std::exit(77);
  }
  int p[2];
  REQUIRE(::pipe(p) == 0);
  Child child;
  child.pid = ::fork();
  REQUIRE(child.pid >= 0);
  if (child.pid == 0) serve_in_new_namespace(p[1]);
  ::close(p[1]);
  uint16_t port = 0;
  const bool got_port = ::read(p[0], &port, sizeof(port)) == sizeof(port);
  ::close(p[0]);
  if (!got_port) {
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    child.pid = -1;
    std::printf("SKIP: cannot make a network namespace here (child exit %d)\n", WEXITSTATUS(status));
    std::exit(77);
  }
  const auto self = static_cast<uint32_t>(::getpid());
  const auto server_pid = static_cast<uint32_t>(child.pid);
  REQUIRE(net_namespace_of(server_pid) != net_namespace_of(self));

  // As `causeway trace --http-port PORT` looks for it: the listener is in the child's table only.
  const auto servers = find_servers({}, {port}, self);
  const auto it = std::find_if(servers.begin(), servers.end(), [&](const Server& s) { return s.pid == server_pid; });
  REQUIRE(it != servers.end());
  CHECK(it->listen.text() == "127.0.0.1:" + std::to_string(port));

  EngineScraper scraper(100'000'000);
  scraper.add(server_pid, it->listen);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  scraper.stop();
  const auto recs = scraper.take();
  REQUIRE(recs.size() >= 2);
  CHECK(recs[0].pid == server_pid);
  CHECK(recs[0].url == "http://127.0.0.1:" + std::to_string(port) + "/metrics");
  REQUIRE(recs[0].samples.size() == 1);
  CHECK(recs[0].samples[0].name == "vllm:num_requests_running");
  CHECK(recs[0].samples[0].value == 3.0);
  CHECK(scraper.counters().failures == 0);

  // The scraper's thread came back: a socket made now is in our namespace.
  auto ours = socket_in_namespace_of(self, AF_INET);
  REQUIRE(ours);
  ::close(*ours);
}
