#include "mcp/auth.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdlib>
#include <sstream>

#include "common/user_input.h"

namespace causeway::mcp {
namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Result<void> check_token(const std::string& value, const std::string& where) {
  if (value.size() < 16) return make_error("usage", "The bearer token in " + where + " is shorter than 16 characters; use a long random one.");
  for (unsigned char c : value)
    if (c <= 0x20 || c >= 0x7F) return make_error("usage", "The bearer token in " + where + " must be printable ASCII without spaces.");
  return {};
}

Result<BearerToken> checked(std::vector<std::string> values, const char* origin, const std::string& where) {
  if (values.empty()) return make_error("usage", where + " holds no bearer token.");
  for (const auto& v : values)
    if (auto ok = check_token(v, where); !ok) return ok.error();
  return BearerToken{values.front(), std::move(values), origin};
}

bool bearer_scheme(std::string_view authorization) {
  constexpr std::string_view prefix = "Bearer ";
  if (authorization.size() < prefix.size()) return false;
  // The scheme is case-insensitive (RFC 7235).
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) return false;
  return true;
}

void digest(std::string_view s, unsigned char* out) { SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), out); }

}  // namespace

Result<BearerToken> load_bearer_token(const std::string& token_file) {
  if (!token_file.empty()) {
    auto text = read_user_input(token_file, "--token-file", 1 << 20);
    if (!text) return make_error("usage", text.error().message + ".");
    std::vector<std::string> tokens;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      line = trim(line);
      if (!line.empty() && line[0] != '#') tokens.push_back(line);
    }
    return checked(std::move(tokens), "file", token_file);
  }
  if (const char* env = std::getenv(kTokenEnv); env && *env) return checked({trim(env)}, "env", std::string("$") + kTokenEnv);
  std::string t = random_token();
  return BearerToken{t, {t}, "generated"};
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
  return matching_token(authorization, {token}).has_value();
}

std::optional<size_t> matching_token(std::string_view authorization, const std::vector<std::string>& tokens) {
  if (!bearer_scheme(authorization)) return std::nullopt;
  unsigned char given[SHA256_DIGEST_LENGTH], want[SHA256_DIGEST_LENGTH];
  digest(authorization.substr(7), given);
  std::optional<size_t> found;
  for (size_t i = 0; i < tokens.size(); ++i) {
    digest(tokens[i], want);
    if (CRYPTO_memcmp(given, want, sizeof given) == 0 && !found) found = i;
  }
  return found;
}

}  // namespace causeway::mcp
