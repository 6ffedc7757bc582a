#include "common/tcp_listen.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/unique_fd.h"

namespace causeway {

std::string peer_address_text(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET)
    return inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf) ? buf : "";
  if (a.ss_family != AF_INET6) return "";
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a).sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) return inet_ntop(AF_INET, &v6.s6_addr[12], buf, sizeof buf) ? buf : "";
  return inet_ntop(AF_INET6, &v6, buf, sizeof buf) ? buf : "";
}

Accepted accept_client(int listen_fd) {
  for (;;) {
    Accepted a;
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    a.fd = UniqueFd(::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &from_len, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (a.fd) {
      a.peer = peer_address_text(from);
      return a;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    a.out_of_fds = errno == EMFILE || errno == ENFILE;
    return a;
  }
}

bool drain_client(int fd, size_t& drained, size_t cap) {
  char sink[4096];
  for (;;) {
    ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n > 0 && (drained += static_cast<size_t>(n)) <= cap) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
}

Result<std::pair<int, int>> listen_socket(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return make_error("listen", "Cannot listen on " + host + ":" + service + ": " + gai_strerror(rc) + ".");
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, freeaddrinfo);
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      why = strerror(errno);
      continue;
    }
    // SO_REUSEADDR lets a restarted server bind while old connections sit in TIME_WAIT; it does
    // not let two listeners share the port on Linux. SO_REUSEPORT (cpp-httplib's default)
    // would, and is deliberately not set.
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), backlog) == 0) {
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
      int p = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      return std::make_pair(fd.release(), p);
    }
    why = strerror(errno);
  }
  std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return make_error("listen", "Cannot listen on " + shown + ":" + service + ": " + why +
                                  (why == strerror(EADDRINUSE) ? " (another server, perhaps another causeway, holds this port)." : "."));
}

}  // namespace causeway
