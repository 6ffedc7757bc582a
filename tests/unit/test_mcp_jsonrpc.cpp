#include <doctest/doctest.h>

#include "mcp/jsonrpc.h"

using namespace causeway::mcp;

TEST_CASE("jsonrpc: parse errors and invalid requests carry the right codes") {
  auto bad = parse_message("{not json");
  REQUIRE(std::holds_alternative<ParseFailure>(bad));
  CHECK(std::get<ParseFailure>(bad).error.code == kParseError);

  auto batch = parse_message(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  CHECK(std::get<ParseFailure>(batch).error.code == kInvalidRequest);

  auto no_version = parse_message(R"({"id":7,"method":"ping"})");
  REQUIRE(std::holds_alternative<ParseFailure>(no_version));
  CHECK(std::get<ParseFailure>(no_version).error.code == kInvalidRequest);
  CHECK(std::get<ParseFailure>(no_version).id == 7);  // errors echo the id when readable

  auto bad_id = parse_message(R"({"jsonrpc":"2.0","id":{"x":1},"method":"ping"})");
  CHECK(std::get<ParseFailure>(bad_id).error.code == kInvalidRequest);

  auto bad_method = parse_message(R"({"jsonrpc":"2.0","id":1,"method":5})");
  CHECK(std::get<ParseFailure>(bad_method).error.code == kInvalidRequest);
}

TEST_CASE("jsonrpc: requests, notifications and responses") {
  auto req = parse_message(R"({"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}})");
  REQUIRE(std::holds_alternative<Message>(req));
  CHECK_FALSE(std::get<Message>(req).notification);
  CHECK(std::get<Message>(req).id == "a");

  auto note = parse_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  CHECK(std::get<Message>(note).notification);

  auto resp = parse_message(R"({"jsonrpc":"2.0","id":1,"result":{}})");
  CHECK(std::get<Message>(resp).response);
}

TEST_CASE("jsonrpc: serialized messages are one line even with newlines and bad UTF-8 inside") {
  std::string line = make_result(1, json{{"text", "a\nb\xff"}});
  CHECK(line.find('\n') == std::string::npos);
  CHECK(json::parse(line)["result"]["text"] == "a\nb\xEF\xBF\xBD");
  std::string err = make_error_response(nullptr, RpcError{kParseError, "Parse error", nullptr});
  CHECK(json::parse(err)["id"].is_null());
}
