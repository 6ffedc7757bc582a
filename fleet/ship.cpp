#include "fleet/ship.h"

#include <chrono>

#include "fleet/fleet_schema.h"
#include "fleet/ship_table.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::fleet {

namespace {

Result<std::vector<SessionKey>> session_keys(sqlite3* db) {
  auto st = Statement::prepare(db, "SELECT coalesce(host, ''), coalesce(boot_id, ''), started_ns, id FROM sessions ORDER BY id");
  if (!st) return st.error();
  std::vector<SessionKey> keys;
  while (st->step() == SQLITE_ROW) keys.push_back({st->col_text(0), st->col_text(1), st->col_int(2), st->col_int(3)});
  return keys;
}

}  // namespace

Result<ShipSummary> ship_db(const Endpoint& endpoint, const std::string& db_path, size_t batch_rows,
                            std::shared_ptr<const CallStop> stop) {
  auto db = open_read_only(db_path);
  if (!db) return db.error();
  auto keys = session_keys(db->get());
  if (!keys) return keys.error();
  ClickHouse ch(endpoint, stop);
  if (auto r = ensure_fleet_schema(ch); !r) return r.error();
  // Versions only grow: wall-clock ns at start, +1 per write.
  uint64_t ver = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  ClickHouse sender(endpoint, stop);
  ShipContext c{ch, sender, db->get(), std::max<size_t>(1, batch_rows), ver};
  ShipSummary out;
  for (const TableSpec& t : table_specs()) out.rows[t.name] = 0;
  for (const SessionKey& k : *keys) {
    for (const TableSpec& t : table_specs()) {
      auto n = ship_table(c, k, t);
      if (!n) {
        Error e = n.error();
        e.message = "session " + std::to_string(k.id) + ", table " + t.name + ": " + e.message +
                    " — rows confirmed so far stay; run ship again to resume";
        return e;
      }
      out.rows[t.name] += *n;
    }
    out.sessions.push_back(k.id);
    out.host = k.host;
  }
  return out;
}

}  // namespace causeway::fleet
