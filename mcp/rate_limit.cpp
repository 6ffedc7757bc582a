#include "mcp/rate_limit.h"

#include <algorithm>

namespace causeway::mcp {

bool RateLimiter::allow(const std::string& client) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (now - last_sweep_ > std::chrono::minutes(5)) {
    // A bucket idle for over a minute is full again: forgetting it changes nothing.
    std::erase_if(buckets_, [&](const auto& kv) { return now - kv.second.last > std::chrono::minutes(1); });
    last_sweep_ = now;
  }
  auto [it, fresh] = buckets_.try_emplace(client, Bucket{static_cast<double>(per_minute_), now});
  Bucket& b = it->second;
  double elapsed_s = std::chrono::duration<double>(now - b.last).count();
  b.tokens = std::min<double>(per_minute_, b.tokens + elapsed_s * per_minute_ / 60.0);
  b.last = now;
  if (b.tokens < 1.0) return false;
  b.tokens -= 1.0;
  return true;
}

}  // namespace causeway::mcp
