#include "mcp/rate_limit.h"

#include <algorithm>

namespace causeway::mcp {

RateLimiter::RateLimiter(double per_second, double burst)
    : per_second_(per_second > 0 ? per_second : 1.0 / 60), burst_(std::max(burst, 1.0)) {}

RateLimiter RateLimiter::per_minute(int n) {
  const double per_minute = n > 0 ? n : 1;
  return RateLimiter(per_minute / 60.0, per_minute);
}

void RateLimiter::forget_full(std::chrono::steady_clock::time_point now) {
  // A bucket that has refilled to the burst reads the same as a forgotten one.
  std::erase_if(buckets_, [&](const auto& kv) {
    return kv.second.tokens + std::chrono::duration<double>(now - kv.second.last).count() * per_second_ >= burst_;
  });
}

bool RateLimiter::allow(const std::string& client) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (now - last_sweep_ > std::chrono::minutes(5)) {
    forget_full(now);
    last_sweep_ = now;
  }
  auto it = buckets_.find(client);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxClients) forget_full(now);
    if (buckets_.size() >= kMaxClients) return true;
    it = buckets_.emplace(client, Bucket{burst_, now}).first;
  }
  Bucket& b = it->second;
  double elapsed_s = std::chrono::duration<double>(now - b.last).count();
  b.tokens = std::min(burst_, b.tokens + elapsed_s * per_second_);
  b.last = now;
  if (b.tokens < 1.0) return false;
  b.tokens -= 1.0;
  return true;
}

}  // namespace causeway::mcp
