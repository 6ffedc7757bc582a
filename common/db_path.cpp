#include "common/db_path.h"

#include <cstdlib>

namespace causeway {

std::string default_db_path() {
  if (const char* env = std::getenv("CAUSEWAY_DB"); env && *env) return env;
  std::string base;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) base = std::string(home) + "/.local/share";
  else base = ".";
  return base + "/causeway/trace.db";
}

}  // namespace causeway
