#include "metrics/server.h"

#include <thread>

#include "common/tcp_listen.h"
#include "metrics/exposition.h"
#include "metrics/scrape_gate.h"

namespace causeway {

struct MetricsServer::Impl {
  std::unique_ptr<ScrapeGate> gate;
  std::thread thread;
  std::string host;
  int port = 0;
};

namespace {

// "HOST:PORT" or "[V6]:PORT" → (host, port).
Result<std::pair<std::string, int>> split_host_port(const std::string& s) {
  std::string host, port;
  if (!s.empty() && s[0] == '[') {
    auto close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':')
      return make_error("usage", "--metrics wants HOST:PORT (e.g. 127.0.0.1:9464), got '" + s + "'");
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else {
    auto colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return make_error("usage", "--metrics wants HOST:PORT (e.g. 127.0.0.1:9464), got '" + s + "'");
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return make_error("usage", "--metrics: bad port in '" + s + "'");
  int p = std::stoi(port);
  if (p > 65535) return make_error("usage", "--metrics: port out of range in '" + s + "'");
  return std::make_pair(host, p);
}

}  // namespace

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() { stop(); }

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& host_port, MetricsRegistry& registry) {
  auto hp = split_host_port(host_port);
  if (!hp) return hp.error();
  auto impl = std::make_unique<Impl>();
  impl->host = hp->first;
  // No SO_REUSEPORT (common/tcp_listen.h): a second trace on the same port fails here instead
  // of splitting the scrapes with the first.
  auto bound = listen_socket(impl->host, hp->second, 128);
  if (!bound) {
    const std::string why = bound.error().message;
    return make_error("metrics_bind", "cannot listen on " + host_port + " for /metrics (" + why +
                                          "); pick another with --metrics HOST:PORT");
  }
  impl->port = bound->second;
  impl->gate = std::make_unique<ScrapeGate>(bound->first, ScrapeLimits{}, [&registry](const ScrapeRequest& req) {
    ScrapeAnswer a;
    if (req.path == "/metrics") {
      registry.count_scrape();
      a.content_type = kPrometheusContentType;
      a.body = render_prometheus(registry.snapshot());
    } else if (req.path == "/") {
      a.body = "causeway metrics: see /metrics\n";
    } else {
      a.status = 404;
      a.body = "Not found: causeway serves /metrics\n";
    }
    return a;
  });
  // The socket listens already: a scrape that comes before the thread runs waits in the backlog.
  ScrapeGate* gate = impl->gate.get();
  impl->thread = std::thread([gate] { gate->run(); });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

int MetricsServer::port() const { return impl_->port; }

std::string MetricsServer::url() const {
  bool v6 = impl_->host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + impl_->host + "]" : impl_->host) + ":" + std::to_string(impl_->port) + "/metrics";
}

void MetricsServer::stop() {
  if (!impl_) return;
  // Returns within one turn of the gate's loop: it never blocks on a client.
  impl_->gate->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace causeway
