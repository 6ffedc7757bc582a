#include "metrics/scrape_gate.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "common/tcp_listen.h"

namespace causeway {

namespace {

using ScrapeClock = std::chrono::steady_clock;

const char* scrape_status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
  }
}

std::string scrape_lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// Where the request head ends (just past its empty line), or npos. A bare LF ends lines too,
// as most servers accept.
size_t scrape_head_end(const std::string& in) {
  size_t crlf = in.find("\r\n\r\n"), lf = in.find("\n\n");
  if (crlf == std::string::npos && lf == std::string::npos) return std::string::npos;
  if (lf == std::string::npos || (crlf != std::string::npos && crlf < lf)) return crlf + 4;
  return lf + 2;
}

std::string scrape_response(int status, const std::string& content_type, const std::string& body, bool with_body, bool close,
                            const char* extra_header = nullptr) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + scrape_status_text(status) + "\r\nContent-Type: " + content_type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  if (extra_header) out += extra_header;
  out += close ? "Connection: close\r\n\r\n" : "\r\n";
  if (with_body) out += body;
  return out;
}

}  // namespace

ScrapeGate::ScrapeGate(int listen_fd, ScrapeLimits limits, Handler handler)
    : listen_fd_(listen_fd), wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), limits_(limits), handler_(std::move(handler)) {}

void ScrapeGate::stop() {
  stopping_.store(true);
  uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
}

void ScrapeGate::evict_oldest_of(const std::string* peer) {
  auto oldest = table_.end();
  for (auto it = table_.begin(); it != table_.end(); ++it)
    if ((!peer || it->peer == *peer) && (oldest == table_.end() || it->since < oldest->since)) oldest = it;
  if (oldest != table_.end()) table_.erase(oldest);
}

void ScrapeGate::accept_new() {
  for (int i = 0; i < 64; ++i) {
    Accepted a = accept_client(listen_fd_.get());
    if (!a.fd) {
      // Out of descriptors: the oldest connection makes room; the rest wait in the backlog.
      if (a.out_of_fds) evict_oldest_of(nullptr);
      return;
    }
    Conn c;
    c.fd = std::move(a.fd);
    c.peer = std::move(a.peer);
    const auto from_peer = std::count_if(table_.begin(), table_.end(), [&c](const Conn& o) { return o.peer == c.peer; });
    if (static_cast<size_t>(from_peer) >= limits_.max_per_peer) evict_oldest_of(&c.peer);
    if (table_.size() >= limits_.max_connections) evict_oldest_of(nullptr);
    c.since = ScrapeClock::now();
    c.deadline = c.since + limits_.head_timeout;
    table_.push_back(std::move(c));
    // The request usually came with the connection: answer it now, not at the next poll.
    if (!step(table_.back())) table_.pop_back();
  }
}

void ScrapeGate::answer(Conn& c, const std::string& head) {
  const size_t eol = head.find('\n');
  std::string line = head.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  c.close_after = true;
  if (sp1 == std::string::npos || sp2 == sp1 || line.compare(sp2 + 1, 7, "HTTP/1.") != 0) {
    c.out = scrape_response(400, "text/plain; charset=utf-8", "Bad request line\n", true, true);
    return;
  }
  ScrapeRequest req{line.substr(0, sp1), line.substr(sp1 + 1, sp2 - sp1 - 1)};
  req.path = req.path.substr(0, req.path.find('?'));
  // Keep-alive by default in HTTP/1.1 (Prometheus keeps its connection between scrapes).
  bool keep = line.compare(sp2 + 1, std::string::npos, "HTTP/1.1") == 0;
  bool body = false;
  for (size_t at = eol + 1; at < head.size();) {
    size_t end = head.find('\n', at);
    if (end == std::string::npos) end = head.size();
    std::string field = scrape_lower(head.substr(at, end - at));
    at = end + 1;
    const size_t colon = field.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = field.substr(0, colon);
    std::string value = field.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r") + 1);
    if (name == "connection") keep = keep ? value.find("close") == std::string::npos : value.find("keep-alive") != std::string::npos;
    // Nothing here takes a body: one is never read, so the connection ends after the answer.
    if ((name == "content-length" && value != "0") || name == "transfer-encoding") body = true;
  }
  c.close_after = !keep || body;
  c.drain_after = body;
  const bool head_only = req.method == "HEAD";
  if (req.method != "GET" && !head_only) {
    c.close_after = true;
    c.drain_after = body;
    c.out = scrape_response(405, "text/plain; charset=utf-8", "Only GET /metrics here\n", true, true, "Allow: GET, HEAD\r\n");
    return;
  }
  ScrapeAnswer a = handler_(req);
  c.out = scrape_response(a.status, a.content_type, a.body, !head_only, c.close_after);
}

bool ScrapeGate::read_head(Conn& c) {
  char buf[4096];
  for (;;) {
    const size_t end = scrape_head_end(c.in);
    if (end != std::string::npos && end <= limits_.max_head_bytes) {
      const std::string head = c.in.substr(0, end);
      c.in.erase(0, end);
      answer(c, head);
      c.phase = Phase::kWrite;
      c.out_sent = 0;
      c.deadline = ScrapeClock::now() + limits_.write_timeout;
      return write_out(c);
    }
    if ((end != std::string::npos ? end : c.in.size()) > limits_.max_head_bytes) {
      c.out = scrape_response(431, "text/plain; charset=utf-8",
                              "Request header fields too large: the request line and headers must fit in " +
                                  std::to_string(limits_.max_head_bytes / 1024) + " KiB\n",
                              true, true);
      c.close_after = c.drain_after = true;
      c.in.clear();
      c.phase = Phase::kWrite;
      c.out_sent = 0;
      c.deadline = ScrapeClock::now() + limits_.write_timeout;
      return write_out(c);
    }
    ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
}

bool ScrapeGate::write_out(Conn& c) {
  while (c.out_sent < c.out.size()) {
    ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      c.out_sent += static_cast<size_t>(n);
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
  c.out.clear();
  const auto now = ScrapeClock::now();
  if (c.close_after) {
    if (!c.drain_after) return false;
    ::shutdown(c.fd.get(), SHUT_WR);
    c.phase = Phase::kDrain;
    c.drained = 0;
    c.deadline = now + limits_.drain_timeout;
    return true;
  }
  c.phase = Phase::kHead;
  c.deadline = now + limits_.head_timeout;
  return read_head(c);  // a pipelined request may be read already
}

bool ScrapeGate::step(Conn& c) {
  if (c.phase == Phase::kHead) return read_head(c);
  if (c.phase == Phase::kWrite) return write_out(c);
  return drain_client(c.fd.get(), c.drained, limits_.drain_bytes);
}

void ScrapeGate::run() {
  std::vector<pollfd> fds;
  std::vector<Conn> kept;
  while (!stopping_.load()) {
    auto now = ScrapeClock::now();
    auto next = now + std::chrono::seconds(1);
    fds.clear();
    fds.push_back({wake_fd_.get(), POLLIN, 0});
    fds.push_back({listen_fd_.get(), POLLIN, 0});
    for (const auto& c : table_) {
      fds.push_back({c.fd.get(), static_cast<short>(c.phase == Phase::kWrite ? POLLOUT : POLLIN), 0});
      next = std::min(next, c.deadline);
    }
    const int wait_ms =
        static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(std::max(next - now, ScrapeClock::duration::zero())).count());
    if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    now = ScrapeClock::now();
    kept.clear();
    for (size_t i = 0; i < table_.size(); ++i) {
      Conn& c = table_[i];
      bool keep = !(fds[i + 2].revents & POLLNVAL);
      if (keep && fds[i + 2].revents) keep = step(c);
      // Past its deadline: closed, whatever it was doing (head, write, drain).
      if (keep && now >= c.deadline) keep = false;
      if (keep) kept.push_back(std::move(c));
    }
    table_.swap(kept);
    kept.clear();  // closes what was dropped now, not at the next turn
    if (fds[1].revents & POLLIN) accept_new();
  }
}

}  // namespace causeway
