// One line per HTTP request: time, client, HTTP verb, JSON-RPC method, tool, status,
// duration. Never the token or the request body. JSON lines so they can be filtered with jq.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"

namespace causeway::mcp {

struct AuditEntry {
  std::string client;       // ip:port
  std::string http_method;
  std::string rpc_method;   // "" when the body was not read (401, 403, 429 …)
  std::string tool;
  int status = 0;
  int rpc_error = 0;
  bool tool_error = false;
  double duration_ms = 0;
};

class AuditLog {
 public:
  // "" = stderr; else the file is opened for appending (created 0600).
  static Result<std::unique_ptr<AuditLog>> open(const std::string& path);
  ~AuditLog();
  void write(const AuditEntry& e);

 private:
  explicit AuditLog(FILE* f, bool owned) : f_(f), owned_(owned) {}
  FILE* f_;
  bool owned_;
  std::mutex mu_;
};

}  // namespace causeway::mcp
