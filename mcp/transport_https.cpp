// The only translation unit that includes cpp-httplib (it is heavy to compile).
#include "mcp/transport_https.h"

#include <httplib.h>
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/untrusted_json.h"
#include "mcp/audit_log.h"
#include "mcp/auth.h"
#include "mcp/rate_limit.h"
#include "mcp/tls_cert.h"

namespace causeway::mcp {
namespace {

using Clock = std::chrono::steady_clock;

// Per-request facts the audit logger reads after the response is written; cpp-httplib runs a
// request start to finish on one pool thread.
struct RequestFacts {
  Clock::time_point start;
  std::string rpc_method;
  std::string tool;
  int rpc_error = 0;
  bool tool_error = false;
};
thread_local RequestFacts t_facts;

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

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
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

bool wants_progress(const std::string& body) {
  if (body.find("progressToken") == std::string::npos) return false;
  json doc = parse_untrusted_json_or_null(body);
  return doc.is_object() && doc.value("method", "") == "tools/call" && doc.contains("params") && doc["params"].is_object() &&
         doc["params"].contains("_meta") && doc["params"]["_meta"].is_object() && doc["params"]["_meta"].contains("progressToken");
}

}  // namespace

bool localhost_name(const std::string& host_header) {
  std::string h = lower(host_header);
  for (const char* name : {"localhost", "127.0.0.1", "[::1]"}) {
    std::string n = name;
    if (h == n) return true;
    if (h.rfind(n + ":", 0) == 0 && h.size() > n.size() + 1 && h.find_first_not_of("0123456789", n.size() + 1) == std::string::npos)
      return true;
  }
  return false;
}

static bool loopback_address(const std::string& host) { return host == "127.0.0.1" || host == "::1" || host == "localhost"; }

bool origin_allowed(const std::string& origin, const std::string& allowed_csv) {
  std::string o = lower(origin);
  for (const char* scheme : {"http://", "https://"}) {
    for (const char* host : {"localhost", "127.0.0.1", "[::1]"}) {
      std::string base = std::string(scheme) + host;
      if (o == base) return true;
      if (o.rfind(base + ":", 0) == 0 && o.size() > base.size() + 1 &&
          o.find_first_not_of("0123456789", base.size() + 1) == std::string::npos)
        return true;
    }
  }
  std::stringstream ss(allowed_csv);
  for (std::string a; std::getline(ss, a, ',');) {
    size_t b = a.find_first_not_of(' '), e = a.find_last_not_of(' ');
    if (b != std::string::npos && o == lower(a.substr(b, e - b + 1))) return true;
  }
  return false;
}

Result<void> serve_https(Server& server, const HttpsOptions& options, const std::function<bool()>& stop) {
  auto where = parse_listen(options.listen);
  if (!where) return where.error();
  auto tls = ensure_tls_material(options.tls_cert, options.tls_key, options.state_dir);
  if (!tls) return tls.error();
  auto token = load_bearer_token(options.token_file);
  if (!token) return token.error();
  auto audit = AuditLog::open(options.audit_log);
  if (!audit) return audit.error();
  RateLimiter limiter(options.rate_per_minute);
  // Failed authentication gets its own budget per address, so guessing tokens is slow and
  // cannot drain a real user's bucket.
  RateLimiter auth_failures(options.rate_per_minute);

  const std::string cert_path = tls->cert_path, key_path = tls->key_path;
  std::string tls_error;
  httplib::SSLServer svr([&](SSL_CTX& ctx) {
    // TLS 1.3 only: no downgrade to 1.2 cipher suites, no renegotiation.
    SSL_CTX_set_min_proto_version(&ctx, TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(&ctx, TLS1_3_VERSION);
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET);
    if (SSL_CTX_use_certificate_chain_file(&ctx, cert_path.c_str()) != 1) {
      tls_error = "cannot load the certificate " + cert_path;
      return false;
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, key_path.c_str(), SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(&ctx) != 1) {
      tls_error = "cannot load the private key " + key_path + " (or it does not match the certificate)";
      return false;
    }
    return true;
  });
  if (!svr.is_valid()) return make_error("tls", "TLS setup failed: " + (tls_error.empty() ? "invalid TLS context" : tls_error) + ".");

  const size_t threads = options.threads ? options.threads : 8;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(options.max_body_bytes);
  svr.set_read_timeout(10, 0);
  svr.set_write_timeout(30, 0);
  svr.set_keep_alive_timeout(10);
  svr.set_keep_alive_max_count(1000);
  // A response is written in pieces (headers, then body); with Nagle's algorithm the second
  // piece waits for the client's delayed ACK, ~40 ms per request on keep-alive connections.
  svr.set_tcp_nodelay(true);

  const std::vector<std::string> tokens = token->all;
  const std::string allowed = options.allowed_origins;
  const bool loopback = loopback_address(where->first);
  svr.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    t_facts = RequestFacts{Clock::now(), "", "", 0, false};
    auto too_many = [&res] {
      res.set_header("Retry-After", "1");
      res.set_header("Connection", "close");
      json_error(res, 429, kInvalidRequest, "Too many requests: slow down (per-client rate limit)");
      return httplib::Server::HandlerResponse::Handled;
    };
    // A browser page on another site must not reach a local server (DNS rebinding).
    // Bound to loopback, only loopback names may appear in Host (DNS rebinding again).
    if (loopback && !localhost_name(req.get_header_value("Host"))) {
      res.set_header("Connection", "close");
      json_error(res, 403, kInvalidRequest, "Forbidden: Host not allowed");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.has_header("Origin") && !origin_allowed(req.get_header_value("Origin"), allowed)) {
      res.set_header("Connection", "close");
      json_error(res, 403, kInvalidRequest, "Forbidden: Origin not allowed");
      return httplib::Server::HandlerResponse::Handled;
    }
    auto who = matching_token(req.get_header_value("Authorization"), tokens);
    if (!who) {
      if (!auth_failures.allow(req.remote_addr)) return too_many();
      res.set_header("WWW-Authenticate", "Bearer realm=\"causeway\"");
      res.set_header("Connection", "close");
      json_error(res, 401, kInvalidRequest, "Unauthorized: send Authorization: Bearer <token>");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!limiter.allow("token " + std::to_string(*who) + " from " + req.remote_addr)) return too_many();
    return httplib::Server::HandlerResponse::Unhandled;
  });

  svr.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    AuditEntry e;
    e.client = req.remote_addr + ":" + std::to_string(req.remote_port);
    e.http_method = req.method;
    e.rpc_method = t_facts.rpc_method;
    e.tool = t_facts.tool;
    e.status = res.status;
    e.rpc_error = t_facts.rpc_error;
    e.tool_error = t_facts.tool_error;
    e.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_facts.start).count();
    audit.value()->write(e);
  });

  auto method_not_allowed = [](const httplib::Request&, httplib::Response& res) {
    // Stateless server: no standalone SSE stream (GET) and no session to end (DELETE).
    res.set_header("Allow", "POST");
    json_error(res, 405, kInvalidRequest, "Method not allowed: POST JSON-RPC messages to /mcp");
  };
  svr.Get("/mcp", method_not_allowed);
  svr.Delete("/mcp", method_not_allowed);

  svr.Post("/mcp", [&](const httplib::Request& req, httplib::Response& res) {
    std::string ctype = lower(req.get_header_value("Content-Type"));
    if (ctype.rfind("application/json", 0) != 0) {
      json_error(res, 415, kInvalidRequest, "Content-Type must be application/json");
      return;
    }
    const std::string scope = req.remote_addr;
    const RequestHeaders headers = routing_headers(req);
    if (wants_progress(req.body) && lower(req.get_header_value("Accept")).find("text/event-stream") != std::string::npos) {
      // A refused request is answered 400 with JSON, not with a stream.
      Exchange check;
      check.headers = headers;
      if (auto refused = server.refusal(req.body, check)) {
        t_facts.rpc_method = check.method;
        t_facts.rpc_error = check.rpc_error;
        res.status = 400;
        res.set_content(*refused, "application/json");
        return;
      }
      // Progress streams as SSE on this response; the result is the last event.
      std::string body = req.body;
      res.set_header("Cache-Control", "no-store");
      res.set_chunked_content_provider("text/event-stream", [&server, body, scope, headers](size_t, httplib::DataSink& sink) {
        auto send = [&sink](const std::string& line) {
          std::string event = "event: message\ndata: " + line + "\n\n";
          sink.write(event.data(), event.size());
        };
        Exchange ex;
        ex.scope = scope;
        ex.answer_cancelled = true;
        ex.headers = headers;
        ex.notify = send;
        auto reply = server.handle(body, ex);
        t_facts.rpc_method = ex.method;
        t_facts.tool = ex.tool;
        t_facts.rpc_error = ex.rpc_error;
        t_facts.tool_error = ex.tool_error;
        if (reply) send(*reply);
        sink.done();
        return true;
      });
      return;
    }
    Exchange ex;
    ex.scope = scope;
    ex.answer_cancelled = true;
    ex.headers = headers;
    auto reply = server.handle(req.body, ex);
    t_facts.rpc_method = ex.method;
    t_facts.tool = ex.tool;
    t_facts.rpc_error = ex.rpc_error;
    t_facts.tool_error = ex.tool_error;
    if (!reply) {
      res.status = 202;  // notification or client response: accepted, no body
      return;
    }
    // 2026-07-28 maps refusals onto HTTP statuses; legacy clients read every answer from a 200
    // (a 404 means "session expired" to them).
    res.status = ex.bad_request ? 400 : (ex.modern && ex.rpc_error == kMethodNotFound) ? 404 : 200;
    res.set_content(*reply, "application/json");
  });

  // Port 0 asks for an ephemeral port (tests); on_listening learns which.
  int port = where->second;
  if (port == 0) port = svr.bind_to_any_port(where->first);
  else if (!svr.bind_to_port(where->first, port)) port = -1;
  if (port <= 0) return make_error("listen", "Cannot listen on " + options.listen + " (in use, or not an address of this host).");

  std::string host = where->first;
  std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::cerr << "causeway mcp: certificate " << tls->cert_path << (tls->generated ? " (generated now)" : "")
            << "\ncauseway mcp: certificate SHA-256 fingerprint " << tls->fingerprint << "\n";
  if (token->origin == "generated")
    std::cerr << "causeway mcp: no --token-file or $" << kTokenEnv << "; generated bearer token: " << token->value << "\n";
  else
    std::cerr << "causeway mcp: bearer token" << (token->all.size() > 1 ? "s (" + std::to_string(token->all.size()) + ")" : std::string()) << " from " << token->origin << "\n";
  // Last, so whoever waits for this line has seen the ones above.
  std::cerr << "causeway mcp: serving https://" << shown << ":" << port << "/mcp (TLS 1.3 only)" << std::endl;
  if (options.on_listening) options.on_listening(port);

  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done.load()) {
      if (stop()) {
        svr.stop();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  bool ok = svr.listen_after_bind();
  done.store(true);
  server.cancel_all();
  watcher.join();
  if (!ok && !stop()) return make_error("listen", "The HTTPS server stopped unexpectedly.");
  return {};
}

}  // namespace causeway::mcp
