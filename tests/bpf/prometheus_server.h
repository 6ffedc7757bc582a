// Debian's `prometheus` for tests: installed with apt-get when missing (the test skips, with
// the reason, only when that fails), started on a loopback port with a private config and
// TSDB in a temp folder, and queried through its HTTP API (/api/v1/query).
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/test_support.h"

namespace causeway::test {

// "" when /usr/bin/prometheus and /usr/bin/promtool are here (installing Debian's package if
// needed: apt-get install, then apt-get update and again), else why not.
std::string prometheus_missing();

// A free TCP port on 127.0.0.1 (bound to port 0 and released: the caller binds it next).
int free_loopback_port();

class PrometheusServer {
 public:
  // Writes config_yaml to <dir>/prometheus.yml, starts prometheus on a free loopback port
  // with its TSDB in <dir>/tsdb, and waits for /-/ready (60 s: a busy 2-core host).
  PrometheusServer(const TempDir& dir, const std::string& config_yaml);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // GET /api/v1/query: the result vector of `expr` evaluated at `time` (Unix seconds; 0 =
  // now). Throws with Prometheus' error text when the query fails.
  nlohmann::json query(const std::string& expr, double time = 0) const;
  std::string log() const;
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

}  // namespace causeway::test
