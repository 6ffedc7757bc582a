// Bearer-token authentication for the HTTPS transport. The token comes from a file or the
// environment (never argv, which other users can read in /proc); without either, a random
// one is generated and printed once to stderr.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace causeway::mcp {

inline constexpr const char* kTokenEnv = "CAUSEWAY_MCP_TOKEN";

struct BearerToken {
  std::string value;
  std::string origin;  // "file", "env" or "generated"
};

// token_file wins over $CAUSEWAY_MCP_TOKEN; fails when the file is unreadable or the token
// is shorter than 16 characters.
Result<BearerToken> load_bearer_token(const std::string& token_file);

// 32 random bytes, hex.
std::string random_token();

// Whether an Authorization header carries exactly this token ("Bearer <token>"). Compares
// SHA-256 digests with CRYPTO_memcmp so neither content nor length leaks through timing.
bool bearer_matches(std::string_view authorization, const std::string& token);

}  // namespace causeway::mcp
