#include "mcp/https_gate.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace causeway::mcp {

TlsConnection::~TlsConnection() {
  if (ssl) SSL_free(ssl);
}

namespace {

// "10.0.0.2" / "fe80::1"; an IPv4-mapped address reads as IPv4, so one client is one key.
std::string address_text(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET)
    return inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf) ? buf : "";
  if (a.ss_family != AF_INET6) return "";
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a).sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) return inet_ntop(AF_INET, &v6.s6_addr[12], buf, sizeof buf) ? buf : "";
  return inet_ntop(AF_INET6, &v6, buf, sizeof buf) ? buf : "";
}

}  // namespace

bool TlsConnection::has_head() const { return buffered.find("\r\n\r\n", consumed) != std::string::npos; }

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
                                  (why == strerror(EADDRINUSE) ? " (another server, perhaps another causeway mcp, holds this port)." : "."));
}

HttpsGate::HttpsGate(SSL_CTX* ctx, int listen_fd, GateLimits limits, Ready ready)
    : ctx_(ctx),
      listen_fd_(listen_fd),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      limits_(limits),
      handshakes_(limits.handshakes_per_second_per_peer, limits.handshake_burst_per_peer),
      ready_(std::move(ready)) {}

void HttpsGate::keep_alive(std::unique_ptr<TlsConnection> c) {
  c->buffered.erase(0, c->consumed);
  c->consumed = 0;
  {
    std::lock_guard lock(returned_mu_);
    returned_.emplace_back(std::move(c), Phase::kHead);
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
}

void HttpsGate::close_after_drain(std::unique_ptr<TlsConnection> c) {
  // The answer is written; close_notify, then FIN, then drop whatever the client still sends.
  SSL_shutdown(c->ssl);
  ::shutdown(c->fd.get(), SHUT_WR);
  {
    std::lock_guard lock(returned_mu_);
    returned_.emplace_back(std::move(c), Phase::kDrain);
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
}

void HttpsGate::evict_oldest(bool authenticated) {
  auto in_class = [authenticated](const Entry& e) {
    return authenticated ? (e.phase == Phase::kHead && e.conn->authenticated) : !(e.phase == Phase::kHead && e.conn->authenticated);
  };
  auto oldest = table_.end();
  for (auto it = table_.begin(); it != table_.end(); ++it)
    if (in_class(*it) && (oldest == table_.end() || it->since < oldest->since)) oldest = it;
  if (oldest != table_.end()) table_.erase(oldest);
}

void HttpsGate::evict_oldest_of(const std::string& peer) {
  auto oldest = table_.end();
  for (auto it = table_.begin(); it != table_.end(); ++it)
    if (!it->conn->authenticated && it->conn->peer == peer && (oldest == table_.end() || it->since < oldest->since)) oldest = it;
  if (oldest != table_.end()) table_.erase(oldest);
}

void HttpsGate::add(std::unique_ptr<TlsConnection> c, Phase phase) {
  const bool idle = phase == Phase::kHead && c->authenticated;
  if (!c->authenticated) {
    const auto from_peer = std::count_if(table_.begin(), table_.end(), [&c](const Entry& e) {
      return !e.conn->authenticated && e.conn->peer == c->peer;
    });
    if (static_cast<size_t>(from_peer) >= limits_.max_unauthenticated_per_peer) evict_oldest_of(c->peer);
  }
  size_t same = std::count_if(table_.begin(), table_.end(), [idle](const Entry& e) {
    return (e.phase == Phase::kHead && e.conn->authenticated) == idle;
  });
  if (same >= (idle ? limits_.max_idle : limits_.max_unauthenticated)) evict_oldest(idle);
  auto now = SteadyClock::now();
  c->deadline = now + (phase == Phase::kDrain ? limits_.drain_timeout : limits_.head_timeout);
  table_.push_back(Entry{std::move(c), phase, POLLIN, now, 0});
  // A returned connection may hold its next request already (read ahead, or inside the TLS
  // record buffer where poll cannot see it): look now, not at the next readiness.
  if (phase != Phase::kHandshake && !step(table_.back())) table_.pop_back();
}

void HttpsGate::accept_new() {
  for (int i = 0; i < 64; ++i) {
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    UniqueFd fd(::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&from), &from_len, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors: make room by dropping the oldest stranger; the rest wait in the
      // listen backlog.
      if (errno == EMFILE || errno == ENFILE) evict_oldest(false);
      return;
    }
    std::string peer = address_text(from);
    if (!handshakes_.allow(peer)) continue;
    int one = 1;
    // Responses go out in pieces (head, body); Nagle would hold the second for the client's
    // delayed ACK (~40 ms per request).
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SSL* ssl = SSL_new(ctx_);
    if (!ssl) continue;
    SSL_set_fd(ssl, fd.get());
    SSL_set_accept_state(ssl);
    auto c = std::make_unique<TlsConnection>(std::move(fd), ssl);
    c->peer = std::move(peer);
    add(std::move(c), Phase::kHandshake);
  }
}

void HttpsGate::take_returned() {
  uint64_t n;
  while (::read(wake_fd_.get(), &n, sizeof n) > 0) {
  }
  std::vector<std::pair<std::unique_ptr<TlsConnection>, Phase>> back;
  {
    std::lock_guard lock(returned_mu_);
    back.swap(returned_);
  }
  for (auto& [c, phase] : back) add(std::move(c), phase);
}

bool HttpsGate::step(Entry& e) {
  TlsConnection& c = *e.conn;
  auto wait_for = [&e](int err) {
    if (err == SSL_ERROR_WANT_READ) e.events = POLLIN;
    else if (err == SSL_ERROR_WANT_WRITE) e.events = POLLOUT;
    else return false;
    return true;
  };
  if (e.phase == Phase::kDrain) {
    char sink[4096];
    for (;;) {
      ssize_t n = ::recv(c.fd.get(), sink, sizeof sink, MSG_DONTWAIT);
      if (n > 0 && (e.drained += n) <= limits_.drain_bytes) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
  }
  if (e.phase == Phase::kHandshake) {
    ERR_clear_error();
    int r = SSL_do_handshake(c.ssl);
    if (r != 1) return wait_for(SSL_get_error(c.ssl, r));
    e.phase = Phase::kHead;
  }
  char buf[4096];
  for (;;) {
    if (c.has_head()) {
      ready_(std::move(e.conn));
      return false;
    }
    if (c.buffered.size() - c.consumed > limits_.max_head_bytes) return false;
    ERR_clear_error();
    int r = SSL_read(c.ssl, buf, sizeof buf);
    if (r <= 0) return wait_for(SSL_get_error(c.ssl, r));
    c.buffered.append(buf, static_cast<size_t>(r));
  }
}

void HttpsGate::run(const std::function<bool()>& stop) {
  std::vector<pollfd> fds;
  std::vector<Entry> kept;
  while (!stop()) {
    take_returned();
    auto now = SteadyClock::now();
    auto next = now + std::chrono::milliseconds(100);
    fds.clear();
    fds.push_back({wake_fd_.get(), POLLIN, 0});
    fds.push_back({listen_fd_.get(), POLLIN, 0});
    for (const auto& e : table_) {
      fds.push_back({e.conn->fd.get(), e.events, 0});
      next = std::min(next, e.conn->deadline);
    }
    int wait_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(std::max(next - now, SteadyClock::duration::zero())).count());
    if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) return;
    now = SteadyClock::now();
    kept.clear();
    for (size_t i = 0; i < table_.size(); ++i) {
      Entry& e = table_[i];
      bool keep = !(fds[i + 2].revents & POLLNVAL);
      if (keep && fds[i + 2].revents) keep = step(e);
      // Past its deadline: closed, whatever it was doing (handshake, head, drain).
      if (keep && now >= e.conn->deadline) keep = false;
      if (keep) kept.push_back(std::move(e));
    }
    table_.swap(kept);
    kept.clear();  // closes what was dropped now, not at the next turn
    if (fds[1].revents & POLLIN) accept_new();
  }
}

}  // namespace causeway::mcp
