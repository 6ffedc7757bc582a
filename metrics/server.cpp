#include "metrics/server.h"

#include <httplib.h>

#include <chrono>
#include <thread>

#include "metrics/exposition.h"

namespace causeway {

struct MetricsServer::Impl {
  httplib::Server http;
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
  impl->http.Get("/metrics", [&registry](const httplib::Request&, httplib::Response& res) {
    registry.count_scrape();
    res.set_content(render_prometheus(registry.snapshot()), kPrometheusContentType);
  });
  impl->http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("causeway metrics: see /metrics\n", "text/plain");
  });
  // Scrapes are tiny; a few worker threads are plenty and bound the cost of a scrape storm.
  impl->http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second trace
  // bind the same port silently and split the scrapes between the two.
  impl->http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (hp->second == 0) {
    impl->port = impl->http.bind_to_any_port(impl->host);
    if (impl->port <= 0) return make_error("metrics_bind", "cannot listen on " + host_port + " for /metrics");
  } else {
    if (!impl->http.bind_to_port(impl->host, hp->second))
      return make_error("metrics_bind", "cannot listen on " + host_port +
                                            " for /metrics (port in use or address not local?); pick another with --metrics HOST:PORT");
    impl->port = hp->second;
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->http.listen_after_bind(); });
  // Return only once the accept loop runs: a stop() before that would be lost and the
  // destructor's join would wait forever.
  for (int i = 0; i < 5000 && !impl->http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

int MetricsServer::port() const { return impl_->port; }

std::string MetricsServer::url() const {
  bool v6 = impl_->host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + impl_->host + "]" : impl_->host) + ":" + std::to_string(impl_->port) + "/metrics";
}

void MetricsServer::stop() {
  if (!impl_) return;
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace causeway
