#include <doctest/doctest.h>

#include <string>

#include "common/untrusted_json.h"

using namespace causeway;

TEST_CASE("parse_untrusted_json: depth and size limits, before any tree is built") {
  auto nested = [](size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  auto ok = parse_untrusted_json(nested(kJsonMaxDepth));
  REQUIRE(ok.ok());
  CHECK(ok->is_array());
  auto deep = parse_untrusted_json(nested(kJsonMaxDepth + 1));
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().code == "json_too_deep");
  // 400,000 levels: nlohmann would parse it, then overflow the stack copying or dumping it.
  CHECK(parse_untrusted_json(nested(400000)).error().code == "json_too_deep");
  CHECK(parse_untrusted_json("{\"a\":" + nested(100) + "}").error().code == "json_too_deep");
  CHECK(parse_untrusted_json(R"({"a":[1,2,{"b":null}]})", JsonLimits{.max_depth = 3}).ok());
  CHECK_FALSE(parse_untrusted_json(R"({"a":[1,2,{"b":null}]})", JsonLimits{.max_depth = 2}).ok());
  CHECK(parse_untrusted_json("[1,2", {}).error().code == "json_invalid");
  CHECK(parse_untrusted_json("", {}).error().code == "json_invalid");
  CHECK(parse_untrusted_json("[1] x", {}).error().code == "json_invalid");
  CHECK(parse_untrusted_json("[1,2,3]", JsonLimits{.max_bytes = 6}).error().code == "json_too_large");
  CHECK(parse_untrusted_json_or_null(nested(1000)).is_null());
  CHECK(parse_untrusted_json_or_null("").is_null());
  CHECK(parse_untrusted_json_or_null("{\"k\":1}")["k"] == 1);
}

TEST_CASE("sanitize_json_strings cleans values and keys at every level") {
  nlohmann::json doc = {{"a\x1b[2J", {"x\ny", 3, {{"k", "\xE2\x80\xAEtxet"}}}}};
  nlohmann::json clean = sanitize_json_strings(doc, 64);
  CHECK(clean.dump().find("\\u001b") == std::string::npos);
  REQUIRE(clean.contains("a[2J"));
  CHECK(clean["a[2J"][0] == "x y");
  CHECK(clean["a[2J"][1] == 3);
  CHECK(clean["a[2J"][2]["k"] == "txet");
}
