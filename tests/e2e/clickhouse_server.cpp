// The shared server of the e2e fleet tests (tests/e2e/clickhouse_fixture.h running_server).
#include <doctest/doctest.h>

#include <memory>

#include "tests/e2e/clickhouse_fixture.h"

namespace causeway::test {
namespace {

std::unique_ptr<ClickHouseServer>& server() {
  static std::unique_ptr<ClickHouseServer> s;
  return s;
}

}  // namespace

// Runs before any test: without a server there is nothing to test (a skip, with the reason).
std::string missing_requirement() {
  server() = std::make_unique<ClickHouseServer>();
  if (server()->skipped()) return "clickhouse-server unavailable: " + server()->problem();
  return "";
}

ClickHouseServer& running_server() {
  REQUIRE_MESSAGE(server()->problem().empty(), server()->problem());
  return *server();
}

}  // namespace causeway::test
