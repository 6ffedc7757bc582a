// Per-client token bucket: `per_minute` requests per minute on average, bursts up to the
// same number. The caller names the client (the HTTPS transport: which bearer token and which
// address, so users behind one proxy address do not share a bucket); idle buckets are
// dropped so the map stays small.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace causeway::mcp {

class RateLimiter {
 public:
  explicit RateLimiter(int per_minute) : per_minute_(per_minute > 0 ? per_minute : 1) {}
  // Takes one token; false when the client is over its rate (answer 429).
  bool allow(const std::string& client);

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point last;
  };
  int per_minute_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
  std::chrono::steady_clock::time_point last_sweep_ = std::chrono::steady_clock::now();
};

}  // namespace causeway::mcp
