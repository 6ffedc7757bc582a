// Bearer-token authentication for the HTTPS transport. The token comes from a file or the
// environment (never argv, which other users can read in /proc); without either, a random
// one is generated and printed once to stderr.
#pragma once

#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace causeway::mcp {

inline constexpr const char* kTokenEnv = "CAUSEWAY_MCP_TOKEN";

struct BearerToken {
  std::string value;                // the first token (the one printed when generated)
  std::vector<std::string> all;     // every accepted token: one per user or client
  std::string origin;               // "file", "env" or "generated"
};

// token_file wins over $CAUSEWAY_MCP_TOKEN; fails when the file is unreadable or a token
// is shorter than 16 characters. The file holds one token per line (blank lines and lines
// starting with # are skipped), so each user behind a shared proxy can get their own.
Result<BearerToken> load_bearer_token(const std::string& token_file);

// 32 random bytes, hex.
std::string random_token();

// Whether an Authorization header carries exactly this token ("Bearer <token>"). Compares
// SHA-256 digests with CRYPTO_memcmp so neither content nor length leaks through timing.
bool bearer_matches(std::string_view authorization, const std::string& token);

// Index in `tokens` of the token the Authorization header carries, if any. Every token is
// compared, so the time does not say which one matched.
std::optional<size_t> matching_token(std::string_view authorization, const std::vector<std::string>& tokens);

}  // namespace causeway::mcp
