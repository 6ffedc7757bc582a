#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <optional>
#include <thread>

#include <fstream>
#include <sys/stat.h>

#include <cstdlib>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "mcp/auth.h"
#include "mcp/https_admission.h"
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
  RateLimiter r = RateLimiter::per_minute(5);
  int allowed = 0;
  for (int i = 0; i < 10; ++i) allowed += r.allow("a");
  CHECK(allowed == 5);
  CHECK(r.allow("b"));
}

TEST_CASE("rate limit: a burst, then the per-second rate; refilled buckets are forgotten under a crowd") {
  RateLimiter r(100.0, 10.0);
  int allowed = 0;
  for (int i = 0; i < 50; ++i) allowed += r.allow("a");
  CHECK(allowed == 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // ~6 tokens back
  allowed = 0;
  for (int i = 0; i < 50; ++i) allowed += r.allow("a");
  CHECK(allowed >= 4);
  CHECK(allowed <= 9);
}

TEST_CASE("rate limit: past 65,536 busy clients a newcomer is let through; a known one keeps its budget") {
  RateLimiter r(0.001, 2.0);  // nothing refills during the test
  CHECK(r.allow("a"));
  CHECK(r.allow("a"));
  CHECK_FALSE(r.allow("a"));
  int refused = 0;
  for (int i = 0; i < 70000; ++i) refused += !r.allow("client " + std::to_string(i));
  CHECK(refused == 0);
  CHECK_FALSE(r.allow("a"));
}

namespace {
X509* read_pem_cert(const std::string& path) {
  FILE* f = fopen(path.c_str(), "re");
  if (!f) return nullptr;
  X509* c = PEM_read_X509(f, nullptr, nullptr, nullptr);
  fclose(f);
  return c;
}
}  // namespace

TEST_CASE("tls: a generated local CA signs the leaf; both reused, keys 0600") {
  test::TempDir dir;
  auto first = ensure_tls_material("", "", dir.path());
  REQUIRE(first.ok());
  CHECK(first->generated);
  CHECK(first->ca_path == dir.path() + "/mcp-ca.pem");
  CHECK(first->fingerprint.size() == 32 * 3 - 1);
  for (const char* key : {"/mcp-key.pem", "/mcp-ca-key.pem"}) {
    struct stat st {};
    REQUIRE(stat((dir.path() + key).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
  }
  X509* ca = read_pem_cert(first->ca_path);
  X509* leaf = read_pem_cert(first->cert_path);
  REQUIRE(ca);
  REQUIRE(leaf);
  // What Node 20's verifier needs: a CA:TRUE anchor that signed a CA:FALSE server leaf.
  CHECK(X509_check_ca(ca) >= 1);
  CHECK(X509_check_ca(leaf) == 0);
  CHECK(X509_check_issued(ca, leaf) == X509_V_OK);
  CHECK((X509_get_key_usage(ca) & KU_KEY_CERT_SIGN) != 0);
  CHECK((X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER) != 0);
  CHECK(X509_check_ip_asc(leaf, "127.0.0.1", 0) == 1);
  CHECK(X509_check_ip_asc(leaf, "::1", 0) == 1);
  CHECK(X509_check_host(leaf, "localhost", 0, 0, nullptr) == 1);
  CHECK(X509_check_ip_asc(leaf, "10.1.2.3", 0) != 1);
  // The chain verifies with the CA as the only trust anchor.
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* vctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(vctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(vctx, X509_PURPOSE_SSL_SERVER);
  CHECK(X509_verify_cert(vctx) == 1);
  X509_STORE_CTX_free(vctx);
  X509_STORE_free(store);
  X509_free(leaf);

  auto again = ensure_tls_material("", "", dir.path());
  REQUIRE(again.ok());
  CHECK_FALSE(again->generated);
  CHECK(again->fingerprint == first->fingerprint);
  // Another listen address: a new leaf, signed by the same CA (clients keep trusting it).
  auto other = ensure_tls_material("", "", dir.path(), "10.1.2.3");
  REQUIRE(other.ok());
  CHECK(other->generated);
  CHECK(other->fingerprint != first->fingerprint);
  leaf = read_pem_cert(other->cert_path);
  REQUIRE(leaf);
  CHECK(X509_check_ip_asc(leaf, "10.1.2.3", 0) == 1);
  CHECK(X509_check_issued(ca, leaf) == X509_V_OK);
  X509_free(leaf);
  X509_free(ca);

  CHECK_FALSE(ensure_tls_material(first->cert_path, "", "").ok());  // cert without key
  chmod((dir.path() + "/mcp-ca-key.pem").c_str(), 0644);
  CHECK_FALSE(ensure_tls_material("", "", dir.path(), "10.1.2.3").ok());  // refuses a readable CA key
  chmod((dir.path() + "/mcp-ca-key.pem").c_str(), 0600);
  chmod(first->key_path.c_str(), 0644);
  CHECK_FALSE(ensure_tls_material("", "", dir.path(), "10.1.2.3").ok());  // refuses a readable key
}

TEST_CASE("tls: a given certificate with its chain loads from memory; a key of another pair is refused") {
  test::TempDir dir;
  auto made = ensure_tls_material("", "", dir.path());
  REQUIRE(made.ok());
  // A user's file as servers ship them: the leaf, then the CA that signed it.
  const std::string chain = dir.path() + "/chain.pem";
  {
    std::ofstream out(chain);
    out << made->cert_pem << test::read_file(made->ca_path);
  }
  auto given = ensure_tls_material(chain, made->key_path, "");
  REQUIRE(given.ok());
  CHECK_FALSE(given->generated);
  CHECK(given->fingerprint == made->fingerprint);  // the leaf, not the CA behind it
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  REQUIRE(ctx);
  CHECK(use_tls_material(ctx, *given).ok());
  STACK_OF(X509)* extra = nullptr;
  SSL_CTX_get0_chain_certs(ctx, &extra);
  CHECK(sk_X509_num(extra) == 1);
  SSL_CTX_free(ctx);
  // The CA's key with the leaf: loads, does not match.
  auto wrong = ensure_tls_material(chain, dir.path() + "/mcp-ca-key.pem", "");
  REQUIRE(wrong.ok());
  ctx = SSL_CTX_new(TLS_server_method());
  auto used = use_tls_material(ctx, *wrong);
  SSL_CTX_free(ctx);
  REQUIRE_FALSE(used.ok());
  CHECK(used.error().message.find("does not match") != std::string::npos);
  // Not a file: a clear error naming the flag.
  auto missing = ensure_tls_material(dir.path() + "/nope.pem", made->key_path, "");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("--tls-cert") != std::string::npos);
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

// The request gate alone (mcp/https_admission.h), in the order it checks: Host, Origin, path,
// token, rate, method and body framing.
TEST_CASE("https: the request gate refuses by the head alone") {
  RequestAdmission gate(AdmissionPolicy{{"secret-token"}, "", true, 100, 600});
  auto head_of = [](std::string method, std::string path, std::map<std::string, std::string> headers) {
    return [method, path, headers](RequestAdmission& g) {
      RequestHead h{method, path, "10.0.0.1", [&headers](const char* name) -> std::optional<std::string> {
                      auto it = headers.find(name);
                      if (it == headers.end()) return std::nullopt;
                      return it->second;
                    }};
      return g.check(h);
    };
  };
  const std::map<std::string, std::string> ok{{"Host", "localhost:8443"}, {"Authorization", "Bearer secret-token"},
                                              {"Content-Length", "10"}};
  auto admitted = head_of("POST", "/mcp", ok)(gate);
  CHECK_FALSE(admitted.refusal);
  CHECK(admitted.authenticated);
  auto with = [&](std::map<std::string, std::string> changes) {
    auto h = ok;
    for (auto& [k, v] : changes) {
      if (v == "<none>") h.erase(k);
      else h[k] = v;
    }
    return h;
  };
  auto status_of = [&](std::string method, std::string path, std::map<std::string, std::string> h) {
    auto a = head_of(method, path, h)(gate);
    return a.refusal ? a.refusal->status : 0;
  };
  CHECK(status_of("POST", "/mcp", with({{"Host", "evil.example"}})) == 403);
  CHECK(status_of("POST", "/mcp", with({{"Origin", "https://evil.example"}})) == 403);
  auto not_found = head_of("GET", "/.well-known/oauth-authorization-server", ok)(gate);
  REQUIRE(not_found.refusal);
  CHECK(not_found.refusal->status == 404);
  CHECK(not_found.refusal->plain_text);
  auto no_token = head_of("POST", "/mcp", with({{"Authorization", "<none>"}}))(gate);
  REQUIRE(no_token.refusal);
  CHECK(no_token.refusal->status == 401);
  CHECK_FALSE(no_token.authenticated);
  REQUIRE(no_token.refusal->headers.size() == 1);
  CHECK(no_token.refusal->headers[0].second == "Bearer realm=\"causeway\"");
  auto bad_token = head_of("POST", "/mcp", with({{"Authorization", "Bearer guess"}}))(gate);
  REQUIRE(bad_token.refusal);
  CHECK(bad_token.refusal->headers[0].second.find("invalid_token") != std::string::npos);
  CHECK(status_of("PUT", "/mcp", ok) == 405);
  CHECK(status_of("GET", "/mcp", ok) == 400);  // a body on a GET
  CHECK(status_of("POST", "/mcp", with({{"Transfer-Encoding", "gzip"}, {"Content-Length", "<none>"}})) == 501);
  CHECK(status_of("POST", "/mcp", with({{"Transfer-Encoding", "chunked"}})) == 400);
  CHECK(status_of("POST", "/mcp", with({{"Content-Length", "<none>"}})) == 411);
  CHECK(status_of("POST", "/mcp", with({{"Content-Length", "x"}})) == 400);
  CHECK(status_of("POST", "/mcp", with({{"Content-Length", "101"}})) == 413);
  // Not on loopback: any Host.
  RequestAdmission open_gate(AdmissionPolicy{{"secret-token"}, "", false, 100, 600});
  CHECK_FALSE(head_of("POST", "/mcp", with({{"Host", "gpu-7.example"}}))(open_gate).refusal);
}

TEST_CASE("https: Host names accepted on a loopback listener") {
  CHECK(localhost_name("localhost"));
  CHECK(localhost_name("127.0.0.1:8443"));
  CHECK(localhost_name("[::1]:1"));
  CHECK_FALSE(localhost_name("evil.example.com"));
  CHECK_FALSE(localhost_name("127.0.0.1.evil.com"));
  CHECK_FALSE(localhost_name(""));
}
