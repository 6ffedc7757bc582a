// The only translation unit that includes cpp-httplib. cpp-httplib parses requests and writes
// responses (Server::process_request on a Stream); connections, TLS and deadlines are ours
// (https_gate.h): its own listener does the handshake in the worker thread without an overall
// deadline, and sets SO_REUSEPORT.
#include "mcp/transport_https.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <sstream>

#include "common/tcp_listen.h"
#include "mcp/audit_log.h"
#include "mcp/auth.h"
#include "mcp/https_admission.h"
#include "mcp/https_answer.h"
#include "mcp/https_gate.h"
#include "mcp/tls_cert.h"

namespace causeway::mcp {
namespace {

using Clock = std::chrono::steady_clock;

// Per-request facts the audit logger reads after the response is written; cpp-httplib runs a
// request start to finish on one pool thread.
struct RequestFacts {
  Clock::time_point start;
  AnswerFacts answer;
};
thread_local RequestFacts t_facts;

// What the worker must do with the connection after the response; set by the handlers.
struct ConnectionFacts {
  std::string peer;          // ip:port, known before the request line is parsed
  bool authenticated = false;
  bool body_read = false;    // the request body was read to its end
  bool close = false;        // the response says Connection: close
  bool unread_body = false;  // close, but drain first: the client may still be sending
};
thread_local ConnectionFacts t_conn;

// Total time a worker waits for a request body (the head is complete before a worker sees the
// connection), and per write for the response.
constexpr auto kBodyTimeout = std::chrono::seconds(30);
constexpr auto kWriteTimeout = std::chrono::seconds(30);
constexpr size_t kMaxRequestsPerConnection = 1000;
// Connections the kernel may hold before the gate accepts them; beyond, SYNs are dropped and
// the client retries after its 1 s SYN timeout. The gate accepts quickly, but one address
// that reconnects as fast as the gate closes its connections (the per-address cap) fills a
// small queue whenever the gate thread waits for a CPU: with 128, 49–170 SYNs were dropped
// per run of security_https_per_peer's crowding, and an honest client's call waited 1,027 ms
// once. The kernel caps this at net.core.somaxconn (4096 by default).
constexpr int kListenBacklog = 4096;
// Connections with a complete request head waiting for a worker; beyond, new ones are closed
// (every worker busy and this many waiting means the server is overloaded, not slow).
constexpr size_t kMaxWaiting = 512;

// cpp-httplib's parser over a connection the gate prepared: first the bytes it read ahead,
// then the TLS stream, every read bounded by one deadline for the whole request.
class TlsStream final : public httplib::Stream {
 public:
  TlsStream(TlsConnection& c, SteadyClock::time_point read_deadline) : c_(c), read_deadline_(read_deadline) {}

  bool is_readable() const override {
    return c_.consumed < c_.buffered.size() || SSL_pending(c_.ssl) > 0 || wait(POLLIN, read_deadline_);
  }
  bool is_writable() const override { return wait(POLLOUT, SteadyClock::now() + kWriteTimeout); }

  ssize_t read(char* ptr, size_t size) override {
    if (c_.consumed < c_.buffered.size()) {
      size_t n = std::min(size, c_.buffered.size() - c_.consumed);
      memcpy(ptr, c_.buffered.data() + c_.consumed, n);
      c_.consumed += n;
      return static_cast<ssize_t>(n);
    }
    for (;;) {
      ERR_clear_error();
      int r = SSL_read(c_.ssl, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (r > 0) return r;
      int err = SSL_get_error(c_.ssl, r);
      if (err == SSL_ERROR_ZERO_RETURN) return 0;
      if (!retry(err, read_deadline_)) return -1;
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      ERR_clear_error();
      int r = SSL_write(c_.ssl, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (r > 0) return r;
      if (!retry(SSL_get_error(c_.ssl, r), SteadyClock::now() + kWriteTimeout)) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(false, ip, port); }
  socket_t socket() const override { return c_.fd.get(); }

 private:
  bool wait(short events, SteadyClock::time_point deadline) const {
    for (;;) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
      if (left <= 0) return false;
      pollfd p{c_.fd.get(), events, 0};
      int n = ::poll(&p, 1, static_cast<int>(left));
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
  }
  bool retry(int ssl_error, SteadyClock::time_point deadline) const {
    if (ssl_error == SSL_ERROR_WANT_READ) return wait(POLLIN, deadline);
    if (ssl_error == SSL_ERROR_WANT_WRITE) return wait(POLLOUT, deadline);
    return false;
  }
  void address(bool peer, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip.clear();
    port = -1;
    auto* sa = reinterpret_cast<sockaddr*>(&a);
    if ((peer ? getpeername(c_.fd.get(), sa, &len) : getsockname(c_.fd.get(), sa, &len)) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&a);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      port = ntohs(in->sin_port);
    } else if (a.ss_family == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&a);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
      port = ntohs(in6->sin6_port);
    }
    ip = text;
  }

  TlsConnection& c_;
  SteadyClock::time_point read_deadline_;
};

// cpp-httplib's request parser and router, without its listener.
class RequestParser : public httplib::Server {
 public:
  using httplib::Server::process_request;
  // cpp-httplib ends streamed (chunked) responses when its server socket is closed, its sign
  // of shutdown; ours lives in the gate, so say when it is open. Never closed from here.
  void set_serving(int listen_fd) { svr_sock_ = listen_fd; }
};

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};

Result<std::unique_ptr<SSL_CTX, SslCtxFree>> server_tls_context(const TlsMaterial& tls) {
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return make_error("tls", "TLS setup failed: cannot create an OpenSSL context.");
  // TLS 1.3 only: no downgrade to 1.2 cipher suites, no renegotiation. No session tickets:
  // clients reconnect rarely and a ticket key is one more secret to keep.
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx.get(), TLS1_3_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(ctx.get(), 0);
  // Non-blocking sockets: a write may be retried from another buffer address, and may be partial.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (auto used = use_tls_material(ctx.get(), tls); !used) return used.error();
  return ctx;
}

bool has_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") || (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

// The head of `req` as the request gate reads it (mcp/https_admission.h).
RequestHead request_head(const httplib::Request& req) {
  return RequestHead{req.method, req.path, req.remote_addr, [&req](const char* name) -> std::optional<std::string> {
                       if (!req.has_header(name)) return std::nullopt;
                       return req.get_header_value(name);
                     }};
}

Result<std::pair<std::string, int>> parse_listen(const std::string& listen) {
  // "8443" and ":8443" mean loopback: listening on other interfaces must be asked for.
  size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos || colon == 0 ? "127.0.0.1" : listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = 0;
  try {
    size_t used = 0;
    std::string digits = listen.substr(colon + 1);
    port = std::stoi(digits, &used);
    if (used != digits.size()) throw std::invalid_argument(digits);
  } catch (...) {
    return make_error("usage", "--http needs HOST:PORT (or PORT for 127.0.0.1), e.g. 127.0.0.1:8443; got " + listen);
  }
  if (port < 0 || port > 65535) return make_error("usage", "--http port out of range: " + listen);
  return std::make_pair(host, port);
}

void json_error(httplib::Response& res, int status, int code, const std::string& message) {
  res.status = status;
  res.set_content(make_error_response(nullptr, RpcError{code, message, nullptr}), "application/json");
}

std::optional<std::string> trimmed_header(const httplib::Request& req, const char* name) {
  if (!req.has_header(name)) return std::nullopt;
  std::string v = req.get_header_value(name);
  // RFC 9110 §5.5: optional whitespace around a field value is not part of it.
  size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : v.substr(b, e - b + 1);
}

RequestHeaders routing_headers(const httplib::Request& req) {
  return RequestHeaders{trimmed_header(req, "MCP-Protocol-Version"), trimmed_header(req, "Mcp-Method"),
                        trimmed_header(req, "Mcp-Name")};
}

// What serve_https() opened before serving: the listen address, TLS, tokens, the audit log.
struct HttpsSetup {
  std::pair<std::string, int> where;
  TlsMaterial tls;
  BearerToken token;
  std::unique_ptr<AuditLog> audit;
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx;
};

Result<HttpsSetup> open_https(const HttpsOptions& options) {
  auto where = parse_listen(options.listen);
  if (!where) return where.error();
  auto tls = ensure_tls_material(options.tls_cert, options.tls_key, options.state_dir, where->first);
  if (!tls) return tls.error();
  auto token = load_bearer_token(options.token_file);
  if (!token) return token.error();
  auto audit = AuditLog::open(options.audit_log);
  if (!audit) return audit.error();
  auto ctx = server_tls_context(*tls);
  if (!ctx) return ctx.error();
  return HttpsSetup{std::move(*where), std::move(*tls), std::move(*token), std::move(*audit), std::move(*ctx)};
}

// Reads a POST's body within --max-body and answers it as JSON, 202 or an SSE stream.
void answer_post(McpAnswer& answer, size_t max_body, const httplib::Request& req, httplib::Response& res,
                 const httplib::ContentReader& read_body) {
  std::string ctype = https_lower(req.get_header_value("Content-Type"));
  if (ctype.rfind("application/json", 0) != 0) {
    json_error(res, 415, kInvalidRequest, "Content-Type must be application/json");
    return;
  }
  // Counted as it arrives, chunked or not (and after decompression): cpp-httplib checks
  // --max-body against Content-Length only, and read a 100 MB chunked body whole.
  std::string body;
  bool too_big = false;
  bool complete = read_body([&](const char* data, size_t n) {
    if (body.size() + n > max_body) {
      too_big = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  if (!complete) {
    res.set_header("Connection", "close");
    if (too_big) json_error(res, 413, kInvalidRequest, "Request body larger than --max-body");
    else json_error(res, 400, kInvalidRequest, "Cannot read the request body (malformed, or too slow)");
    return;
  }
  t_conn.body_read = true;
  const std::string scope = req.remote_addr;
  const RequestHeaders headers = routing_headers(req);
  if (McpAnswer::streams(body, req.get_header_value("Accept"))) {
    // A refused request is answered 400 with JSON, not with a stream.
    if (auto refused = answer.stream_refusal(body, headers, t_facts.answer)) {
      res.status = 400;
      res.set_content(*refused, "application/json");
      return;
    }
    // Progress streams as SSE on this response; the result is the last event.
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider("text/event-stream", [&answer, body, scope, headers](size_t, httplib::DataSink& sink) {
      auto send = [&sink](const std::string& line) {
        std::string event = McpAnswer::sse_event(line);
        sink.write(event.data(), event.size());
      };
      answer.stream(body, scope, headers, send, t_facts.answer);
      sink.done();
      return true;
    });
    return;
  }
  JsonAnswer reply = answer.reply_json(body, scope, headers, t_facts.answer);
  res.status = reply.status;
  if (reply.body) res.set_content(*reply.body, "application/json");
}

// The router's handlers around the request gate (pre-routing) and the answer (POST /mcp):
// 405 on GET / DELETE, the connection's fate after the response, one audit line per request.
void route_requests(RequestParser& svr, RequestAdmission& admission, McpAnswer& answer, AuditLog& audit,
                    size_t max_body) {
  svr.set_payload_max_length(max_body);
  // Only the values announced in the Keep-Alive header; the gate enforces them.
  svr.set_keep_alive_timeout(10);
  svr.set_keep_alive_max_count(kMaxRequestsPerConnection);

  svr.set_pre_routing_handler([&admission](const httplib::Request& req, httplib::Response& res) {
    t_facts = RequestFacts{Clock::now(), {}};
    Admission admitted = admission.check(request_head(req));
    if (admitted.authenticated) t_conn.authenticated = true;
    if (!admitted.refusal) return httplib::Server::HandlerResponse::Unhandled;
    const Refusal& r = *admitted.refusal;
    for (const auto& [name, value] : r.headers) res.set_header(name, value);
    if (r.plain_text) {
      res.status = r.status;
      res.set_header("Connection", "close");
      res.set_content(r.message, "text/plain");
    } else {
      res.set_header("Connection", "close");
      json_error(res, r.status, kInvalidRequest, r.message);
    }
    return httplib::Server::HandlerResponse::Handled;
  });

  svr.set_post_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    // A request whose body was left unread, or that could not be parsed, ends the connection:
    // the unread bytes must not be parsed as a next request (that was a phantom 400 in the
    // audit log after each 401 to a POST).
    const bool unread = !req.method.empty() && has_body(req) && !t_conn.body_read;
    if (!unread && !req.method.empty() && res.get_header_value("Connection") != "close") return;
    t_conn.unread_body = unread;
    t_conn.close = true;
    // Once, and without the Keep-Alive cpp-httplib adds unless it closes by itself (handlers
    // and cpp-httplib each add their own Connection header).
    res.headers.erase("Connection");
    res.headers.erase("Keep-Alive");
    res.set_header("Connection", "close");
  });

  svr.set_logger([&audit](const httplib::Request& req, const httplib::Response& res) {
    AuditEntry e;
    e.client = t_conn.peer;
    e.http_method = req.method;
    e.rpc_method = t_facts.answer.rpc_method;
    e.tool = t_facts.answer.tool;
    e.status = res.status;
    e.rpc_error = t_facts.answer.rpc_error;
    e.tool_error = t_facts.answer.tool_error;
    e.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_facts.start).count();
    audit.write(e);
  });

  auto method_not_allowed = [](const httplib::Request&, httplib::Response& res) {
    // Stateless server: no standalone SSE stream (GET) and no session to end (DELETE).
    res.set_header("Allow", "POST");
    json_error(res, 405, kInvalidRequest, "Method not allowed: POST JSON-RPC messages to /mcp");
  };
  svr.Get("/mcp", method_not_allowed);
  svr.Delete("/mcp", method_not_allowed);
  svr.Post("/mcp", [&answer, max_body](const httplib::Request& req, httplib::Response& res,
                                       const httplib::ContentReader& read_body) {
    answer_post(answer, max_body, req, res, read_body);
  });
}

// What the operator reads on stderr once listening: the certificate, the token, the URL.
void print_serving_banner(const HttpsSetup& setup, int port) {
  const std::string& host = setup.where.first;
  std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  const TlsMaterial& tls = setup.tls;
  const BearerToken& token = setup.token;
  std::cerr << "causeway mcp: certificate " << tls.cert_path << (tls.generated ? " (generated now)" : "")
            << "\ncauseway mcp: certificate SHA-256 fingerprint " << tls.fingerprint << "\n";
  if (!tls.ca_path.empty())
    std::cerr << "causeway mcp: signed by the local CA " << tls.ca_path << "; clients trust it with NODE_EXTRA_CA_CERTS=" << tls.ca_path << "\n";
  if (token.origin == "generated")
    std::cerr << "causeway mcp: no --token-file or $" << kTokenEnv << "; generated bearer token: " << token.value << "\n";
  else
    std::cerr << "causeway mcp: bearer token" << (token.all.size() > 1 ? "s (" + std::to_string(token.all.size()) + ")" : std::string()) << " from " << token.origin << "\n";
  // Last, so whoever waits for this line has seen the ones above.
  std::cerr << "causeway mcp: serving https://" << shown << ":" << port << "/mcp (TLS 1.3 only)" << std::endl;
}

// The request workers behind the connection gate: one request per job. The head is complete,
// so a worker waits only for a body (bounded by kBodyTimeout) and for the tool; the connection
// then goes back to the gate to wait for the next request, or is closed.
class RequestWorkers {
 public:
  RequestWorkers(RequestParser& svr, size_t threads) : svr_(svr), pool_(threads ? threads : 8) {}

  // Called on the gate thread for each connection with a complete request head.
  void enqueue(std::unique_ptr<TlsConnection> c) {
    if (waiting_.load() >= kMaxWaiting) return;  // closed unserved
    ++waiting_;
    auto holder = std::make_shared<std::unique_ptr<TlsConnection>>(std::move(c));
    pool_.enqueue([holder, this] { serve_one(std::move(*holder)); });
  }
  void set_gate(HttpsGate* gate) { gate_ = gate; }
  // Queued connections are closed unserved; the caller interrupts running tool calls first.
  void stop() {
    stopping_.store(true);
  }
  void join() { pool_.shutdown(); }

 private:
  void serve_one(std::unique_ptr<TlsConnection> c) {
    --waiting_;
    if (stopping_.load()) return;
    t_conn = ConnectionFacts{};
    std::string ip;
    int peer_port = -1;
    TlsStream strm(*c, SteadyClock::now() + kBodyTimeout);
    strm.get_remote_ip_and_port(ip, peer_port);
    t_conn.peer = ip + ":" + std::to_string(peer_port);
    t_conn.authenticated = c->authenticated;
    const bool last = c->requests + 1 >= kMaxRequestsPerConnection || stopping_.load();
    bool client_closes = false;
    const bool ok = svr_.process_request(strm, last, client_closes, nullptr);
    ++c->requests;
    c->authenticated = t_conn.authenticated;
    if (!ok) return;
    if (t_conn.unread_body) return gate_->close_after_drain(std::move(c));
    if (last || client_closes || t_conn.close) {
      SSL_shutdown(c->ssl);
      return;
    }
    gate_->keep_alive(std::move(c));
  }

  RequestParser& svr_;
  httplib::ThreadPool pool_;
  HttpsGate* gate_ = nullptr;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> waiting_{0};
};

}  // namespace

Result<void> serve_https(Server& server, const HttpsOptions& options, const std::function<bool()>& stop) {
  auto setup = open_https(options);
  if (!setup) return setup.error();
  RequestAdmission admission(AdmissionPolicy{setup->token.all, options.allowed_origins,
                                             loopback_address(setup->where.first), options.max_body_bytes,
                                             options.rate_per_minute});
  McpAnswer answer(server);
  RequestParser svr;
  route_requests(svr, admission, answer, *setup->audit, options.max_body_bytes);

  // Port 0 asks for an ephemeral port (tests); on_listening learns which.
  auto bound = listen_socket(setup->where.first, setup->where.second, kListenBacklog);
  if (!bound) return bound.error();
  const int port = bound->second;
  RequestWorkers workers(svr, options.threads);
  HttpsGate gate(setup->ctx.get(), bound->first, GateLimits{},
                 [&workers](std::unique_ptr<TlsConnection> c) { workers.enqueue(std::move(c)); });
  workers.set_gate(&gate);

  print_serving_banner(*setup, port);
  if (options.on_listening) options.on_listening(port);

  svr.set_serving(bound->first);
  gate.run(stop);
  svr.set_serving(INVALID_SOCKET);
  // Queued connections are closed unserved; running tool calls are interrupted, then joined.
  workers.stop();
  server.cancel_all();
  workers.join();
  return {};
}

}  // namespace causeway::mcp
