#include "tests/e2e/clickhouse_fixture.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "fleet/fleet_query.h"

namespace causeway::test {

namespace {

constexpr const char* kWriterPw = "writer-secret-4711";
constexpr const char* kReaderPw = "reader-secret-0815";

bool port_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

ClickHouseServer::ClickHouseServer(ReaderReach reach) : reach_(reach) {
  std::ofstream(writer_pw_file()) << kWriterPw << "\n";
  std::ofstream(reader_pw_file()) << kReaderPw << "\n";
  for (int p = 20000 + (::getpid() * 7) % 30000, tries = 0; tries < 200; p = 20000 + (p + 97 - 20000) % 30000, ++tries)
    if (port_free(p) && port_free(p + 1) && port_free(p + 2)) {
      http_ = p;
      tcp_ = p + 1;
      break;
    }
  if (!http_) {
    problem_ = "no free loopback ports";
    return;
  }
  start();
}

bool ClickHouseServer::start() {
  auto r = run_process({source_dir() + "/scripts/clickhouse_private.sh", dir_.file("server"), std::to_string(http_),
                        std::to_string(tcp_), kWriterPw, kReaderPw, reach_ == ReaderReach::kAnyDatabase ? "any" : ""},
                       {}, "", 900);
  if (r.exit_code == 77) {
    skip_ = true;
    problem_ = r.err;
    return false;
  }
  if (r.exit_code != 0) {
    problem_ = "clickhouse-server did not start: " + r.err;
    return false;
  }
  pid_ = static_cast<pid_t>(std::stol(r.out));
  problem_.clear();
  return true;
}

ClickHouseServer::~ClickHouseServer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100 && ::kill(pid_, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(pid_, SIGKILL);
}

void ClickHouseServer::kill_hard() {
  ::kill(pid_, SIGKILL);
  // Not our child (the script started it), so it cannot be waited for: wait until its port
  // accepts no more connections.
  for (int i = 0; i < 200 && !port_free(http_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pid_ = 0;
}

fleet::ClickHouse ClickHouseServer::writer(const std::string& database) const {
  auto e = fleet::make_endpoint(url(), database, "causeway_writer", writer_pw_file());
  if (!e) throw std::runtime_error(e.error().message);
  return fleet::ClickHouse(*e);
}

int64_t ClickHouseServer::number(const std::string& sql) const {
  auto ch = writer("default");
  auto r = ch.select(sql, {fleet::ColumnKind::Float});
  if (!r) throw std::runtime_error(r.error().message);
  return r->empty() || r->front().empty() ? -1 : fleet::to_i64(r->front()[0]);
}

}  // namespace causeway::test
