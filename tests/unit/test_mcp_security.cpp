#include <doctest/doctest.h>

#include <fstream>
#include <sys/stat.h>

#include <cstdlib>

#include "mcp/auth.h"
#include "mcp/rate_limit.h"
#include "mcp/tls_cert.h"
#include "tests/support/test_support.h"
#include "mcp/transport_https.h"

using namespace causeway;
using namespace causeway::mcp;

TEST_CASE("auth: bearer tokens compare exactly, scheme case-insensitive") {
  std::string t = random_token();
  CHECK(t.size() == 64);
  CHECK(random_token() != t);
  CHECK(bearer_matches("Bearer " + t, t));
  CHECK(bearer_matches("bearer " + t, t));
  CHECK_FALSE(bearer_matches("Bearer " + t + "x", t));
  CHECK_FALSE(bearer_matches("Bearer " + t.substr(1), t));
  CHECK_FALSE(bearer_matches("Basic " + t, t));
  CHECK_FALSE(bearer_matches("", t));
  CHECK_FALSE(bearer_matches("Bearer ", t));
}

TEST_CASE("auth: token from file, then environment, else generated") {
  test::TempDir dir;
  std::string f = dir.file("token");
  FILE* out = fopen(f.c_str(), "w");
  fputs("  0123456789abcdef0123\n", out);
  fclose(out);
  auto from_file = load_bearer_token(f);
  REQUIRE(from_file.ok());
  CHECK(from_file->value == "0123456789abcdef0123");
  CHECK(from_file->origin == "file");
  CHECK_FALSE(load_bearer_token(dir.file("missing")).ok());
  setenv(kTokenEnv, "short", 1);
  CHECK_FALSE(load_bearer_token("").ok());
  setenv(kTokenEnv, "0123456789abcdef-env", 1);
  CHECK(load_bearer_token("")->origin == "env");
  unsetenv(kTokenEnv);
  CHECK(load_bearer_token("")->origin == "generated");
}

TEST_CASE("auth: a token file holds one token per user; the header says which one") {
  test::TempDir dir;
  const std::string file = dir.file("tokens");
  {
    std::ofstream out(file);
    out << "# users\n0123456789abcdef-alice\n\n  0123456789abcdef-bob  \n";
  }
  auto t = load_bearer_token(file);
  REQUIRE(t.ok());
  REQUIRE(t->all.size() == 2);
  CHECK(t->value == "0123456789abcdef-alice");
  CHECK(matching_token("Bearer 0123456789abcdef-bob", t->all) == std::optional<size_t>(1));
  CHECK(matching_token("bearer 0123456789abcdef-alice", t->all) == std::optional<size_t>(0));
  CHECK_FALSE(matching_token("Bearer 0123456789abcdef-eve", t->all).has_value());
  CHECK_FALSE(matching_token("0123456789abcdef-bob", t->all).has_value());
  {
    std::ofstream out(file);
    out << "0123456789abcdef-alice\nshort\n";
  }
  CHECK_FALSE(load_bearer_token(file).ok());  // every token must be long enough
  {
    std::ofstream out(file);
    out << "# nothing\n";
  }
  CHECK_FALSE(load_bearer_token(file).ok());
}

TEST_CASE("rate limit: bursts up to the per-minute budget, per client") {
  RateLimiter r(5);
  int allowed = 0;
  for (int i = 0; i < 10; ++i) allowed += r.allow("a");
  CHECK(allowed == 5);
  CHECK(r.allow("b"));
}

TEST_CASE("tls: a generated self-signed certificate is reused, key 0600") {
  test::TempDir dir;
  auto first = ensure_tls_material("", "", dir.path());
  REQUIRE(first.ok());
  CHECK(first->generated);
  CHECK(first->fingerprint.size() == 32 * 3 - 1);
  struct stat st {};
  REQUIRE(stat(first->key_path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto again = ensure_tls_material("", "", dir.path());
  REQUIRE(again.ok());
  CHECK_FALSE(again->generated);
  CHECK(again->fingerprint == first->fingerprint);
  CHECK_FALSE(ensure_tls_material(first->cert_path, "", "").ok());  // cert without key
  chmod(first->key_path.c_str(), 0644);
  CHECK_FALSE(ensure_tls_material("", "", dir.path()).ok());  // refuses a readable key
}

TEST_CASE("https: Origin allow-list") {
  CHECK(origin_allowed("http://localhost:3000", ""));
  CHECK(origin_allowed("https://127.0.0.1", ""));
  CHECK(origin_allowed("http://[::1]:8080", ""));
  CHECK_FALSE(origin_allowed("http://localhost.evil.com", ""));
  CHECK_FALSE(origin_allowed("http://localhost:80x", ""));
  CHECK_FALSE(origin_allowed("https://evil.example", ""));
  CHECK(origin_allowed("https://app.example", "https://other.example, https://app.example"));
  CHECK_FALSE(origin_allowed("null", ""));
}

TEST_CASE("https: Host names accepted on a loopback listener") {
  CHECK(localhost_name("localhost"));
  CHECK(localhost_name("127.0.0.1:8443"));
  CHECK(localhost_name("[::1]:1"));
  CHECK_FALSE(localhost_name("evil.example.com"));
  CHECK_FALSE(localhost_name("127.0.0.1.evil.com"));
  CHECK_FALSE(localhost_name(""));
}
