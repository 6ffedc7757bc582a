// The front door of the HTTPS transport: one thread accepts connections, runs their TLS
// handshakes and reads each request head (request line + headers) without blocking, under a
// total deadline per connection; only a connection with a complete request head reaches a
// request worker. So clients that trickle a ClientHello or a header byte by byte (slowloris)
// hold a table entry in this thread, never a worker, and are closed at their deadline or when
// newer connections need their place. cpp-httplib runs the handshake and the head inside its
// worker, 10 s per read and no overall deadline: 8 trickling sockets took all 8 workers.
// docs/MCP.md (HTTPS), docs/SECURITY.md.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "mcp/rate_limit.h"

namespace causeway::mcp {

using SteadyClock = std::chrono::steady_clock;

// One client connection: the socket (non-blocking), its TLS session, and the decrypted bytes
// read ahead of the HTTP parser (the request head, perhaps the start of the body).
struct TlsConnection {
  TlsConnection(UniqueFd fd, SSL* ssl) : fd(std::move(fd)), ssl(ssl) {}
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  UniqueFd fd;  // closed after the destructor frees ssl
  SSL* ssl;
  std::string peer;  // the client's address, without the port
  std::string buffered;
  size_t consumed = 0;         // bytes of `buffered` already given to the HTTP parser
  bool authenticated = false;  // a request on it carried a valid bearer token
  size_t requests = 0;
  SteadyClock::time_point deadline;  // set by the gate for the phase it is in
};

// The body of the 431 the gate answers to a request head over GateLimits::max_head_bytes: a
// JSON-RPC error like every other refusal of the transport.
inline constexpr std::string_view kLargeHeadBody =
    R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request header fields too large: the request line and headers must fit in 16 KiB"}})";

struct GateLimits {
  // From accept (or from the end of the previous response on a kept-alive connection) to a
  // complete request head, TLS handshake included: total, not per read.
  std::chrono::milliseconds head_timeout{10000};
  // Connections that have not shown a valid token yet (handshaking, reading a first head).
  // A new one beyond this closes the oldest: fresh clients win over trickling ones.
  size_t max_unauthenticated = 256;
  // Of those, from one client address: its newest connection closes its own oldest, never
  // another client's, so one address cannot crowd out the rest.
  size_t max_unauthenticated_per_peer = 64;
  // TLS handshakes one address may start: a full handshake costs this thread CPU, so past
  // the budget a new connection is closed at accept, before any TLS work.
  double handshakes_per_second_per_peer = 200;
  double handshake_burst_per_peer = 400;
  // Kept-alive connections of authenticated clients waiting for their next request.
  size_t max_idle = 256;
  size_t max_head_bytes = 16 * 1024;
  // After a refusal whose body was not read (401 …): how long and how much of it is read
  // and dropped before closing, so the client reads the answer instead of a TCP reset.
  std::chrono::milliseconds drain_timeout{2000};
  size_t drain_bytes = 16 << 20;
};

class HttpsGate {
 public:
  using Ready = std::function<void(std::unique_ptr<TlsConnection>)>;
  // Takes ownership of listen_fd. `ready` is called on the gate thread for each connection
  // with a complete request head; it must not block (queue it for a worker).
  HttpsGate(SSL_CTX* ctx, int listen_fd, GateLimits limits, Ready ready);

  // Accepts and serves until stop() turns true (checked every 100 ms).
  void run(const std::function<bool()>& stop);

  // From a worker, thread-safe: a kept-alive connection waits here for its next request.
  void keep_alive(std::unique_ptr<TlsConnection> c);
  // From a worker, thread-safe: the response is written; read and drop what the client still
  // sends (bounded by drain_timeout/drain_bytes), then close.
  void close_after_drain(std::unique_ptr<TlsConnection> c);

 private:
  enum class Phase { kHandshake, kHead, kDrain };
  struct Entry {
    std::unique_ptr<TlsConnection> conn;
    Phase phase;
    short events;  // what poll waits for
    SteadyClock::time_point since;
    size_t drained = 0;
  };

  void accept_new();
  void take_returned();
  // Advances one connection; false = it left the table (handed on or closed).
  bool step(Entry& e);
  // A request head over max_head_bytes: answered 431, then drained and closed.
  bool refuse_large_head(Entry& e);
  void add(std::unique_ptr<TlsConnection> c, Phase phase);
  void evict_oldest(bool authenticated);
  void evict_oldest_of(const std::string& peer);

  SSL_CTX* ctx_;
  // Declared before table_ and returned_: the connections close before the listener.
  UniqueFd listen_fd_;
  UniqueFd wake_fd_;  // eventfd: a worker handed a connection back
  GateLimits limits_;
  RateLimiter handshakes_;  // per client address
  Ready ready_;
  std::vector<Entry> table_;
  std::mutex returned_mu_;
  std::vector<std::pair<std::unique_ptr<TlsConnection>, Phase>> returned_;
};

}  // namespace causeway::mcp
