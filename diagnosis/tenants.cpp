#include "diagnosis/tenants.h"

#include "tracedb/sqlite_handle.h"

namespace causeway {
namespace {

std::optional<std::string> text_or_null(Statement& st, int col) {
  if (st.col_null(col) || st.col_text(col).empty()) return std::nullopt;
  return st.col_text(col);
}

bool has_table(sqlite3* db, const char* name) {
  auto st = Statement::prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
  if (!st) return false;
  st->bind(1, std::string(name));
  return st->step() == SQLITE_ROW;
}

}  // namespace

Result<Tenants> Tenants::load(sqlite3* db, int64_t session_id) {
  Tenants t;
  // /proc/PID/cgroup at discovery: traced processes and the demo's cast.
  auto p = Statement::prepare(db,
                              "SELECT pid, coalesce(cgroup_path, ''), container_id FROM processes WHERE session_id = ?1");
  if (!p) return p.error();
  p->bind(1, session_id);
  while (p->step() == SQLITE_ROW) {
    Tenant& x = t.by_pid_[static_cast<uint32_t>(p->col_int(0))];
    x.cgroup = p->col_text(1);
    x.container = text_or_null(*p, 2);
  }
  if (!has_table(db, "cgroups")) return t;
  // The v2 id the kernel gave each thread: a thread's own record wins over another thread's
  // of the same process (a process's threads normally share one cgroup). A v2 root ("/") on a
  // hybrid host says nothing the v1 path did not.
  auto c = Statement::prepare(db,
                              "SELECT t.pid, c.path, c.container_id, c.pod, t.tid = t.pid FROM threads t "
                              "JOIN cgroups c ON c.session_id = t.session_id AND c.cgroup_id = t.cgroup_id "
                              "WHERE t.session_id = ?1 ORDER BY t.tid = t.pid");
  if (!c) return c.error();
  c->bind(1, session_id);
  while (c->step() == SQLITE_ROW) {
    const std::string path = c->col_text(1);
    Tenant& x = t.by_pid_[static_cast<uint32_t>(c->col_int(0))];
    if (path.empty() || (path == "/" && !x.cgroup.empty())) continue;
    x.cgroup = path;
    if (auto id = text_or_null(*c, 2)) x.container = id;
    x.pod = text_or_null(*c, 3);
  }
  return t;
}

Tenant Tenants::of(uint32_t pid) const {
  auto it = by_pid_.find(pid);
  return it == by_pid_.end() ? Tenant{} : it->second;
}

}  // namespace causeway
