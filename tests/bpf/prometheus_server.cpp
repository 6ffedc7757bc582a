#include "tests/bpf/prometheus_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "tests/bpf/collector_harness.h"

namespace causeway::test {

namespace {
bool installed() { return file_exists("/usr/bin/prometheus") && file_exists("/usr/bin/promtool"); }

ProcessResult apt_get(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/apt-get"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, {"DEBIAN_FRONTEND=noninteractive"}, "", 600);
}
}  // namespace

std::string prometheus_missing() {
  if (installed()) return "";
  if (!file_exists("/usr/bin/apt-get")) return "prometheus is not installed and there is no apt-get to install it";
  const std::vector<std::string> install{"install", "-y", "-qq", "--no-install-recommends", "prometheus"};
  ProcessResult r = apt_get(install);
  if (!installed()) {
    apt_get({"update", "-qq"});  // a fresh image has no package lists
    r = apt_get(install);
  }
  if (installed()) return "";
  return "Debian's prometheus package could not be installed (apt-get install prometheus: exit " +
         std::to_string(r.exit_code) + "): " + r.err.substr(r.err.size() > 400 ? r.err.size() - 400 : 0);
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot bind a loopback port");
  return ntohs(a.sin_port);
}

PrometheusServer::PrometheusServer(const TempDir& dir, const std::string& config_yaml)
    : port_(free_loopback_port()), log_(dir.file("prometheus.log")) {
  const std::string config = dir.file("prometheus.yml");
  std::ofstream(config) << config_yaml;
  pid_ = spawn({"/usr/bin/prometheus", "--config.file=" + config, "--storage.tsdb.path=" + dir.file("tsdb"),
                "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
               log_);
  httplib::Client cli("127.0.0.1", port_);
  cli.set_connection_timeout(1);
  for (int waited = 0;; waited += 200) {
    auto r = cli.Get("/-/ready");
    if (r && r->status == 200) return;
    if (waited > 60000 || ::kill(pid_, 0) != 0) {
      ::kill(pid_, SIGKILL);
      wait_exit(pid_);
      pid_ = -1;
      throw std::runtime_error("prometheus did not get ready: " + read_file(log_));
    }
    sleep_ms(200);
  }
}

PrometheusServer::~PrometheusServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);  // its TSDB is a temp folder: nothing to shut down cleanly for
    wait_exit(pid_);
  }
}

nlohmann::json PrometheusServer::query(const std::string& expr, double time) const {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(30);
  httplib::Params params{{"query", expr}};
  if (time > 0) {
    char t[32];
    std::snprintf(t, sizeof t, "%.3f", time);
    params.emplace("time", t);
  }
  auto r = cli.Get("/api/v1/query", params, httplib::Headers{});
  if (!r) throw std::runtime_error("prometheus query failed: " + httplib::to_string(r.error()));
  const auto doc = nlohmann::json::parse(r->body, nullptr, false);
  if (!doc.is_object() || doc.value("status", "") != "success")
    throw std::runtime_error("prometheus query " + expr + ": HTTP " + std::to_string(r->status) + " " + r->body);
  return doc["data"]["result"];
}

std::string PrometheusServer::log() const { return read_file(log_); }

}  // namespace causeway::test
