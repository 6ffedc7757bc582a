// A tiny plain-HTTP server for GET /metrics (Prometheus scrape target). Plain HTTP on
// purpose: it serves counters, never trace contents, and is meant for 127.0.0.1 or a
// trusted network; the MCP server is the TLS-protected one. Connections are served by one
// thread with deadlines (metrics/scrape_gate.h): slow clients cannot hold it, and stop()
// does not wait for them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "metrics/registry.h"

namespace causeway {

class MetricsServer {
 public:
  // host_port: "127.0.0.1:9464", "[::1]:9464", or "HOST:0" for an ephemeral port (see port()).
  // Binds before returning, so a taken port is an error here, not later. Fails with
  // "usage" (malformed address) or "metrics_bind".
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& host_port, MetricsRegistry& registry);
  ~MetricsServer();  // stops the server and joins its thread (promptly: no client is waited for)
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const;
  std::string url() const;  // http://HOST:PORT/metrics
  void stop();

  struct Impl;

 private:
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace causeway
