#include <doctest/doctest.h>

#include "mcp/json_schema.h"

using causeway::mcp::validate_json;
using json = nlohmann::json;

TEST_CASE("json_schema: the keywords our tool schemas use") {
  json s = json::parse(R"({"type":"object","required":["q"],"additionalProperties":false,
    "properties":{"q":{"type":"string","minLength":1,"maxLength":3},
                  "n":{"type":"integer","minimum":1,"maximum":10},
                  "e":{"type":"string","enum":["A","B"]},
                  "l":{"type":"array","items":{"type":"number"},"maxItems":2}}})");
  CHECK(validate_json(json{{"q", "ab"}}, s).empty());
  CHECK(validate_json(json{{"q", "ab"}, {"n", 3}, {"e", "A"}, {"l", {1, 2.5}}}, s).empty());
  CHECK(validate_json(json::object(), s).find("missing required") != std::string::npos);
  CHECK(validate_json(json{{"q", ""}}, s).find("too short") != std::string::npos);
  CHECK(validate_json(json{{"q", "abcd"}}, s).find("longer than") != std::string::npos);
  CHECK(validate_json(json{{"q", "«»é"}}, s).empty());  // lengths in code points
  CHECK(validate_json(json{{"q", "a"}, {"n", 11}}, s) == "/n: must be <= 10");
  CHECK(validate_json(json{{"q", "a"}, {"n", 1.5}}, s) == "/n: must be integer");
  CHECK(validate_json(json{{"q", "a"}, {"e", "C"}}, s).find("one of") != std::string::npos);
  CHECK(validate_json(json{{"q", "a"}, {"zz", 1}}, s).find("unknown property") != std::string::npos);
  CHECK(validate_json(json{{"q", "a"}, {"l", {1, "x"}}}, s) == "/l/1: must be number");
  CHECK(validate_json(json{{"q", "a"}, {"l", {1, 2, 3}}}, s).find("too many") != std::string::npos);
  CHECK(validate_json(json::array(), s) == "/: must be object");
}

TEST_CASE("json_schema: anyOf, how the tool schemas spell a nullable value (portable, no type arrays)") {
  json s = json::parse(R"({"type":"object","properties":{"f":{"anyOf":[{"type":"string"},{"type":"null"}]}}})");
  CHECK(validate_json(json{{"f", "x"}}, s).empty());
  CHECK(validate_json(json{{"f", nullptr}}, s).empty());
  CHECK(validate_json(json{{"f", 3}}, s) == "/f: must be string");
}

TEST_CASE("json_schema: exclusiveMinimum / exclusiveMaximum, as get_request_latency's quantile uses them") {
  json s = json::parse(R"({"type":"object","properties":{"q":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}}})");
  CHECK(validate_json(json{{"q", 0.99}}, s).empty());
  CHECK(validate_json(json{{"q", 1}}, s) == "/q: must be < 1");
  CHECK(validate_json(json{{"q", 1.5}}, s) == "/q: must be < 1");
  CHECK(validate_json(json{{"q", 0}}, s) == "/q: must be > 0");
  CHECK(validate_json(json{{"q", -0.5}}, s) == "/q: must be > 0");
}
