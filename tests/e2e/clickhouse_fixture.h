// A private clickhouse-server for a test (scripts/clickhouse_private.sh): its own folder,
// loopback ports, the example users (causeway_writer, causeway_reader) with test passwords.
#pragma once

#include <sys/types.h>

#include <string>

#include "fleet/clickhouse.h"
#include "tests/support/test_support.h"

namespace causeway::test {

// What the reader may read: any database (a shared test server, each test its own database),
// or exactly what examples/clickhouse/users.xml gives it (the `causeway` database).
enum class ReaderReach { kAnyDatabase, kAsInExample };

class ClickHouseServer {
 public:
  explicit ClickHouseServer(ReaderReach reach = ReaderReach::kAnyDatabase);
  ~ClickHouseServer();

  // "" when running; else why not (skip_code() says whether that is a skip).
  const std::string& problem() const { return problem_; }
  bool skipped() const { return skip_; }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(http_); }
  std::string closed_url() const { return "http://127.0.0.1:" + std::to_string(http_ + 2); }  // nothing listens there
  std::string writer_pw_file() const { return dir_.file("writer.pw"); }
  std::string reader_pw_file() const { return dir_.file("reader.pw"); }
  const std::string& tmp() const { return dir_.path(); }

  // The writer's connection to `database`, for the test's own checks.
  fleet::ClickHouse writer(const std::string& database) const;
  // One number from a query run as the writer.
  int64_t number(const std::string& sql) const;

  void kill_hard();   // SIGKILL, as a crash would; returns once the process is gone
  bool start();       // (again) on the same data

 private:
  TempDir dir_;
  int http_ = 0, tcp_ = 0;
  pid_t pid_ = 0;
  ReaderReach reach_;
  std::string problem_;
  bool skip_ = false;
};

// The one server of a test binary that links tests/e2e/clickhouse_server.cpp: started before
// any test by its missing_requirement() (without a server there is nothing to test: a skip
// with the reason); running_server() fails the calling test when it did not start.
ClickHouseServer& running_server();

}  // namespace causeway::test
