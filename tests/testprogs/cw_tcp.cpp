// cw_tcp: one TCP connection over loopback for causeway's network bpf tests. The process
// listens, forks the receiver (a second process, named cw_tcp_recv, that reads until EOF),
// writes --ready-file, waits for --wait-file, then connects and sends --bytes as the sender
// (this process, named cw_tcp_send) and exits 0 once the receiver got every byte.
//
//   cw_tcp --family 6 --port 5201 --bytes 4m --ready-file R --wait-file W
//
// Run it in a network namespace whose input path drops a share of the packets to --port and
// the sender retransmits (tests/bpf/test_collector_net_bpf.cpp).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  int family = 6;
  int port = 5201;
  size_t bytes = 4u << 20;
  std::string ready_file, wait_file;
};

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "cw_tcp: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "cw_tcp: %s\nusage: cw_tcp [--family 4|6] [--port P] [--bytes N[k|m]] [--ready-file F] [--wait-file F]\n",
               why);
  std::exit(2);
}

size_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  size_t n = std::strtoull(s.c_str(), &end, 10);
  if (end && (*end == 'k' || *end == 'K')) n <<= 10;
  if (end && (*end == 'm' || *end == 'M')) n <<= 20;
  return n;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + a).c_str());
    std::string v = argv[++i];
    if (a == "--family") o.family = std::stoi(v);
    else if (a == "--port") o.port = std::stoi(v);
    else if (a == "--bytes") o.bytes = parse_bytes(v);
    else if (a == "--ready-file") o.ready_file = v;
    else if (a == "--wait-file") o.wait_file = v;
    else usage(("unknown flag " + a).c_str());
  }
  if (o.family != 4 && o.family != 6) usage("--family is 4 or 6");
  return o;
}

// The loopback address of the family, at port.
sockaddr_storage loopback(int family, int port, socklen_t& len) {
  sockaddr_storage ss{};
  if (family == 6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    a->sin6_addr = in6addr_loopback;
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(*a);
  }
  return ss;
}

// The receiver: reads until EOF, exits 0 when it got `expected` bytes.
[[noreturn]] void receive(int listener, size_t expected) {
  prctl(PR_SET_NAME, "cw_tcp_recv");
  int c = ::accept(listener, nullptr, nullptr);
  if (c < 0) die("accept");
  std::vector<char> buf(1 << 16);
  size_t got = 0;
  for (;;) {
    ssize_t n = ::read(c, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("read");
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(c);
  std::printf("cw_tcp_recv: %zu bytes\n", got);
  std::_Exit(got == expected ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int af = o.family == 6 ? AF_INET6 : AF_INET;
  socklen_t len = 0;
  const sockaddr_storage addr = loopback(o.family, o.port, len);

  int listener = ::socket(af, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) die("socket");
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listener, reinterpret_cast<const sockaddr*>(&addr), len) != 0) die("bind");
  if (::listen(listener, 1) != 0) die("listen");
  pid_t receiver = ::fork();
  if (receiver < 0) die("fork");
  if (receiver == 0) receive(listener, o.bytes);
  ::close(listener);

  prctl(PR_SET_NAME, "cw_tcp_send");
  if (!o.ready_file.empty()) {
    if (FILE* f = std::fopen(o.ready_file.c_str(), "w")) std::fclose(f);
  }
  while (!o.wait_file.empty() && ::access(o.wait_file.c_str(), F_OK) != 0) ::usleep(10'000);

  int s = ::socket(af, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) die("socket");
  if (::connect(s, reinterpret_cast<const sockaddr*>(&addr), len) != 0) die("connect");
  std::vector<char> chunk(1 << 16, 'x');
  for (size_t sent = 0; sent < o.bytes;) {
    ssize_t n = ::write(s, chunk.data(), std::min(chunk.size(), o.bytes - sent));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("write");
    sent += static_cast<size_t>(n);
  }
  ::shutdown(s, SHUT_WR);
  int status = 0;
  if (::waitpid(receiver, &status, 0) != receiver) die("waitpid");
  ::close(s);
  std::printf("cw_tcp_send: %zu bytes\n", o.bytes);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
