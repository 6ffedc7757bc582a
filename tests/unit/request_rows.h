// Requests as the tracker hands them over, for tests that store them with the real writer.
#pragma once

#include <cstdint>
#include <string>

#include "requests/record.h"

namespace causeway::requests {

// A streamed request: ttft ms after its end, then `tokens` tokens `gap` ms apart.
inline Request streamed(const std::string& id, int64_t start_ms, int64_t ttft_ms, int tokens, int64_t gap_ms,
                 const std::string& tenant = "t1", int status = 200) {
  Request r;
  r.pid = 100;
  r.fd = 5;
  r.request_id = id;
  r.method = "POST";
  r.path = "/v1/completions";
  r.tenant = tenant;
  const int64_t ms = 1'000'000;
  r.start_ns = 1'700'000'000'000'000'000 + start_ms * ms;
  r.end_ns = r.start_ns + ms;
  r.first_byte_ns = r.end_ns + 100;
  r.status = status;
  r.streamed = true;
  r.complete = true;
  for (int i = 0; i < tokens; ++i) r.token_ns.push_back(r.end_ns + ttft_ms * ms + i * gap_ms * ms);
  r.last_byte_ns = r.token_ns.empty() ? r.first_byte_ns : r.token_ns.back() + ms;
  return r;
}

}  // namespace causeway::requests
