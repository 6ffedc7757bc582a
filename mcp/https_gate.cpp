#include "mcp/https_gate.h"

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

#include "common/tcp_listen.h"

namespace causeway::mcp {

TlsConnection::~TlsConnection() {
  if (ssl) SSL_free(ssl);
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
    Accepted a = accept_client(listen_fd_.get());
    if (!a.fd) {
      // Out of descriptors: make room by dropping the oldest stranger; the rest wait in the
      // listen backlog.
      if (a.out_of_fds) evict_oldest(false);
      return;
    }
    UniqueFd fd = std::move(a.fd);
    std::string peer = std::move(a.peer);
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
  if (e.phase == Phase::kDrain) return drain_client(c.fd.get(), e.drained, limits_.drain_bytes);
  if (e.phase == Phase::kHandshake) {
    ERR_clear_error();
    int r = SSL_do_handshake(c.ssl);
    if (r != 1) return wait_for(SSL_get_error(c.ssl, r));
    e.phase = Phase::kHead;
  }
  char buf[4096];
  for (;;) {
    // The head's size counts whether it came whole or in pieces.
    const size_t end = c.buffered.find("\r\n\r\n", c.consumed);
    const size_t head_bytes = end != std::string::npos ? end + 4 - c.consumed : c.buffered.size() - c.consumed;
    if (head_bytes > limits_.max_head_bytes) return refuse_large_head(e);
    if (end != std::string::npos) {
      ready_(std::move(e.conn));
      return false;
    }
    ERR_clear_error();
    int r = SSL_read(c.ssl, buf, sizeof buf);
    if (r <= 0) return wait_for(SSL_get_error(c.ssl, r));
    c.buffered.append(buf, static_cast<size_t>(r));
  }
}

bool HttpsGate::refuse_large_head(Entry& e) {
  // An answer, not a reset: the client learns why (RFC 6585 §5), then what it still sends is
  // read and dropped (drain) so the close does not turn into a TCP reset that loses the answer.
  static const std::string answer =
      "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
      std::to_string(kLargeHeadBody.size()) + "\r\n\r\n" + std::string(kLargeHeadBody);
  TlsConnection& c = *e.conn;
  size_t sent = 0;
  while (sent < answer.size()) {
    ERR_clear_error();
    int r = SSL_write(c.ssl, answer.data() + sent, static_cast<int>(answer.size() - sent));
    if (r <= 0) return false;  // the socket cannot take 200 bytes: the client reads nothing anyway
    sent += static_cast<size_t>(r);
  }
  SSL_shutdown(c.ssl);
  ::shutdown(c.fd.get(), SHUT_WR);
  e.phase = Phase::kDrain;
  e.events = POLLIN;
  e.drained = 0;
  c.deadline = SteadyClock::now() + limits_.drain_timeout;
  return true;
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
