// Per-client token bucket: `rate` per second on average, bursts up to `burst`. The caller
// names the client (the HTTPS transport: which bearer token and which address for requests,
// so users behind one proxy address do not share a bucket; the address alone for TLS
// handshakes). Idle buckets are dropped so the map stays small.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace causeway::mcp {

class RateLimiter {
 public:
  RateLimiter(double per_second, double burst);
  // `n` a minute on average, bursts up to `n`.
  static RateLimiter per_minute(int n);
  // Takes one token; false when the client is over its rate.
  bool allow(const std::string& client);

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point last;
  };
  // Buckets kept at most; past it, those full again are forgotten at once (not only at the
  // periodic sweep), and if all are busy a new client is let through: a flood from that many
  // addresses is beyond what a per-address budget can tell apart.
  static constexpr size_t kMaxClients = 65536;
  void forget_full(std::chrono::steady_clock::time_point now);

  double per_second_, burst_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
  std::chrono::steady_clock::time_point last_sweep_ = std::chrono::steady_clock::now();
};

}  // namespace causeway::mcp
