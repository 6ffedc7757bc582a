#include "collector/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "collector/netns.h"
#include "common/unique_fd.h"

namespace causeway::collector {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Waits for `events` until the deadline; false on timeout or error.
bool wait_for(int fd, short events, int64_t deadline) {
  while (true) {
    const int64_t left = deadline - steady_ns();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left / 1'000'000)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

Result<std::string> http_response_body(std::string_view raw) {
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string_view::npos || head_end > 16384) return make_error("http", "no complete response head");
  const std::string_view head = raw.substr(0, head_end);
  // Status line: HTTP/1.x 200 ...
  const size_t eol = head.find("\r\n");
  const std::string_view status = head.substr(0, eol);
  if (status.size() < 12 || status.substr(0, 7) != "HTTP/1." || status[8] != ' ')
    return make_error("http", "not an HTTP/1.x response");
  if (status.substr(9, 3) != "200") return make_error("http", "status " + std::string(status.substr(9, 3)));
  std::string_view body = raw.substr(head_end + 4);
  // Headers that change how the body reads: a length shorter than what came is a cut;
  // chunked is not allowed in an answer to HTTP/1.0.
  size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string_view::npos) e = head.size();
    const std::string_view line = head.substr(pos, e - pos);
    pos = e + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return make_error("http", "malformed header line");
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (ieq(line.substr(0, colon), "transfer-encoding")) return make_error("http", "chunked answer to HTTP/1.0");
    if (ieq(line.substr(0, colon), "content-length")) {
      if (value.empty() || value.size() > 12 || value.find_first_not_of("0123456789") != std::string_view::npos)
        return make_error("http", "bad Content-Length");
      const size_t n = std::strtoull(std::string(value).c_str(), nullptr, 10);
      if (n > body.size()) return make_error("http", "body cut short");
      body = body.substr(0, n);
    }
  }
  return std::string(body);
}

namespace {

// The socket's own address; nullopt when it has none.
std::optional<Endpoint> http_get_local_of(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return std::nullopt;
  return endpoint_from_sockaddr(reinterpret_cast<const uint8_t*>(&local));
}

// Calls on_close when the connection ends (declared after the socket: runs before its close).
struct HttpGetTold {
  const HttpGetOptions& o;
  Endpoint server, local;
  bool told = false;
  bool answered = false;  // read to the server's close: it had accepted the connection
  void tell(const Endpoint& ours) {
    if (!o.on_open || told) return;
    local = ours;
    told = true;
    o.on_open(o.ctx, server, local);
  }
  ~HttpGetTold() {
    if (told && o.on_close) o.on_close(o.ctx, server, local, answered);
  }
};

}  // namespace

Result<std::string> http_get(uint32_t pid, const Endpoint& at, std::string_view path, const HttpGetOptions& o) {
  const int64_t deadline = steady_ns() + o.deadline_ns;
  auto made = socket_in_namespace_of(pid, at.family);
  if (!made) return made.error();
  const UniqueFd s{*made};
  HttpGetTold told{o, at, {}};
  sockaddr_storage a{};
  socklen_t alen = 0;
  if (at.family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
    v4->sin_family = AF_INET;
    std::memcpy(&v4->sin_addr, at.addr.data(), 4);
    alen = sizeof(sockaddr_in);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
    v6->sin6_family = AF_INET6;
    std::memcpy(&v6->sin6_addr, at.addr.data(), 16);
    alen = sizeof(sockaddr_in6);
  }
  // Port 0 at the server's address: the kernel picks our port now, not at connect.
  if (o.on_open && ::bind(s.get(), reinterpret_cast<sockaddr*>(&a), alen) == 0)
    if (auto ours = http_get_local_of(s.get())) told.tell(*ours);
  if (at.family == AF_INET) reinterpret_cast<sockaddr_in*>(&a)->sin_port = htons(at.port);
  else reinterpret_cast<sockaddr_in6*>(&a)->sin6_port = htons(at.port);
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), alen) != 0) {
    if (errno != EINPROGRESS) return make_error("connect", "connection refused");
    if (!wait_for(s.get(), POLLOUT, deadline)) return make_error("timeout", "connect timed out");
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return make_error("connect", "connection refused");
  }
  if (!told.told)
    if (auto ours = http_get_local_of(s.get())) told.tell(*ours);
  const std::string req = "GET " + std::string(path) + " HTTP/1.0\r\nHost: " + at.text() +
                          "\r\nAccept: text/plain\r\nUser-Agent: causeway\r\n\r\n";
  size_t sent = 0;
  while (sent < req.size()) {
    const ssize_t n = ::send(s.get(), req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n > 0) sent += static_cast<size_t>(n);
    else if (n < 0 && errno != EAGAIN && errno != EINTR) return make_error("connect", "send failed");
    else if (!wait_for(s.get(), POLLOUT, deadline)) return make_error("timeout", "send timed out");
  }
  std::string raw;
  char buf[16384];
  while (true) {
    const ssize_t n = ::recv(s.get(), buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n > 0) {
      if (raw.size() + static_cast<size_t>(n) > o.max_bytes) return make_error("too_large", "response over the cap");
      raw.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return make_error("connect", "recv failed");
    if (!wait_for(s.get(), POLLIN, deadline)) return make_error("timeout", "response timed out");
  }
  told.answered = true;
  return http_response_body(raw);
}

}  // namespace causeway::collector
