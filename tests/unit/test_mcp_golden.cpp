// Golden transcripts (tests/golden/mcp/*.jsonl): each line is {"send": message, "expect":
// response-or-null}; pins the wire format clients see. Regenerate after an intended change
// with CAUSEWAY_UPDATE_GOLDEN=1 and review the diff.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/unit/test_mcp_helpers.h"
#include "tests/support/test_support.h"

using namespace causeway;
using json = nlohmann::json;

namespace {

// Values that change with every release are masked.
void normalize(json& j) {
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      if (k == "serverInfo" || k == "io.modelcontextprotocol/serverInfo") v["version"] = "<version>";
      normalize(v);
    }
  } else if (j.is_array()) {
    for (auto& v : j) normalize(v);
  }
}

}  // namespace

TEST_CASE("golden MCP transcripts") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(test::source_dir()) / "tests/golden/mcp";
  REQUIRE(fs::exists(dir));
  bool update = std::getenv("CAUSEWAY_UPDATE_GOLDEN") != nullptr;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".jsonl") continue;
    ++files;
    CAPTURE(entry.path().filename().string());
    // Protocol-only transcripts: no DB needed (tools answer db_missing, which is pinned too).
    auto server = test::make_mcp_server("/nonexistent/causeway-golden.db");
    std::ifstream in(entry.path());
    std::string out;
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      json step = json::parse(line);
      ++n;
      CAPTURE(n);
      mcp::Exchange ex;
      ex.scope = "golden";
      const json& send = step["send"];
      auto reply = server.handle(send.is_string() ? send.get<std::string>() : send.dump(), ex);
      json actual = reply ? json::parse(*reply) : json();
      normalize(actual);
      if (update) {
        step["expect"] = actual;
        out += step.dump() + "\n";
      } else {
        CHECK(actual == step["expect"]);
      }
    }
    if (update) std::ofstream(entry.path()) << out;
  }
  CHECK(files > 0);
}
