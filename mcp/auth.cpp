#include "mcp/auth.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace causeway::mcp {
namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Result<BearerToken> checked(std::string value, const char* origin, const std::string& where) {
  if (value.size() < 16) return make_error("usage", "The bearer token in " + where + " is shorter than 16 characters; use a long random one.");
  for (unsigned char c : value)
    if (c <= 0x20 || c >= 0x7F) return make_error("usage", "The bearer token in " + where + " must be printable ASCII without spaces.");
  return BearerToken{std::move(value), origin};
}

}  // namespace

Result<BearerToken> load_bearer_token(const std::string& token_file) {
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return make_error("usage", "Cannot read --token-file " + token_file + ".");
    std::stringstream ss;
    ss << in.rdbuf();
    return checked(trim(ss.str()), "file", token_file);
  }
  if (const char* env = std::getenv(kTokenEnv); env && *env) return checked(trim(env), "env", std::string("$") + kTokenEnv);
  return BearerToken{random_token(), "generated"};
}

std::string random_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) std::abort();  // no entropy: nothing safe to do
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

bool bearer_matches(std::string_view authorization, const std::string& token) {
  constexpr std::string_view prefix = "Bearer ";
  if (authorization.size() < prefix.size()) return false;
  // The scheme is case-insensitive (RFC 7235).
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) return false;
  std::string_view given = authorization.substr(prefix.size());
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(given.data()), given.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0;
}

}  // namespace causeway::mcp
