#include "mcp/audit_log.h"

#include <fcntl.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/unique_fd.h"
#include "common/units.h"
#include "common/user_output.h"

namespace causeway::mcp {

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  if (path.empty()) return std::unique_ptr<AuditLog>(new AuditLog(stderr, false));
  auto opened = open_user_output(path, OutputOpen::append, 0600);
  if (!opened) return make_error("usage", "Cannot open the audit log for appending: " + opened.error().message);
  UniqueFd fd(*opened);
  FILE* f = fdopen(fd.get(), "a");
  if (!f) return make_error("usage", "Cannot open the audit log " + path + ".");
  fd.release();  // the FILE closes it now
  return std::unique_ptr<AuditLog>(new AuditLog(f, true));
}

AuditLog::~AuditLog() {
  if (owned_) fclose(f_);
}

void AuditLog::write(const AuditEntry& e) {
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  nlohmann::json line = {{"time", format_utc(now)}, {"audit", "mcp"},      {"client", e.client},
                         {"http", e.http_method},   {"status", e.status},  {"ms", static_cast<int64_t>(e.duration_ms * 1000) / 1000.0}};
  if (!e.rpc_method.empty()) line["method"] = e.rpc_method;
  if (!e.tool.empty()) line["tool"] = e.tool;
  if (e.rpc_error) line["rpc_error"] = e.rpc_error;
  if (e.tool_error) line["tool_error"] = true;
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  fwrite(text.data(), 1, text.size(), f_);
  fflush(f_);
}

}  // namespace causeway::mcp
