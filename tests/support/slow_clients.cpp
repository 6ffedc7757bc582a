#include "tests/support/slow_clients.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>

namespace causeway::test {

UniqueFd connect_from(const std::string& source_ip, int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fd;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, source_ip.c_str(), &src.sin_addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) return UniqueFd();
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) return UniqueFd();
  return fd;
}

void raise_fd_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

HttpReply http_exchange(const std::string& source_ip, int port, const std::string& request, int timeout_ms, bool until_close) {
  using Clock = std::chrono::steady_clock;
  HttpReply reply;
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(timeout_ms);
  UniqueFd fd = connect_from(source_ip, port);
  if (!fd) return reply;
  std::string in;
  size_t sent = 0;
  size_t want = std::string::npos;  // head + Content-Length once known
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd.get(), static_cast<short>(POLLIN | (sent < request.size() ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    if ((p.revents & POLLOUT) && sent < request.size()) {
      ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
      if (n > 0) in.append(buf, static_cast<size_t>(n));
    }
    size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos && want == std::string::npos) {
      size_t cl = in.find("Content-Length: ");
      if (cl != std::string::npos && cl < end) want = end + 4 + std::stoul(in.substr(cl + 16));
    }
    if (!until_close && want != std::string::npos && in.size() >= want) break;
  }
  reply.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  size_t end = in.find("\r\n\r\n");
  if (in.rfind("HTTP/1.", 0) == 0 && in.size() > 12) reply.status = std::atoi(in.c_str() + 9);
  reply.head = in.substr(0, end);
  if (end != std::string::npos) reply.body = in.substr(end + 4);
  return reply;
}

SlowClients::SlowClients(int port, size_t idle, size_t drip, std::chrono::milliseconds drip_ms) {
  raise_fd_limit();
  // Idle clients from 100 addresses (127.0.1.1 …), drippers from their own: a cap per client
  // address does not hide them, every socket stays open on the server.
  for (size_t i = 0; i < idle; ++i) {
    UniqueFd fd = connect_from("127.0.1." + std::to_string(1 + i % 100), port);
    if (fd) ++connected_, idle_.push_back(std::move(fd));
  }
  for (size_t i = 0; i < drip; ++i) {
    UniqueFd fd = connect_from("127.0.2." + std::to_string(1 + i), port);
    if (fd) ++connected_, drip_.push_back(std::move(fd));
  }
  dripper_ = std::thread([this, drip_ms, port] {
    const std::string head = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nX-Slow: " + std::string(4000, 'a');
    for (size_t i = 0; !stop_.load(); ++i) {
      for (auto& fd : drip_) (void)::send(fd.get(), head.data() + i % head.size(), 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      std::this_thread::sleep_for(drip_ms);
    }
  });
}

size_t SlowClients::closed_by_server() {
  size_t closed = 0;
  for (auto* set : {&idle_, &drip_})
    for (auto& fd : *set) {
      pollfd p{fd.get(), POLLIN, 0};
      char c;
      if (::poll(&p, 1, 0) > 0 && ::recv(fd.get(), &c, 1, MSG_DONTWAIT | MSG_PEEK) <= 0) ++closed;
    }
  return closed;
}

void SlowClients::stop() {
  stop_.store(true);
  if (dripper_.joinable()) dripper_.join();
}

SlowClients::~SlowClients() { stop(); }

}  // namespace causeway::test
