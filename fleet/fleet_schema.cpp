#include "fleet/fleet_schema.h"

#include <set>

#include "fleet/fleet_query.h"
#include "fleet/tables.h"
#include "fleet/tsv.h"

namespace causeway::fleet {

namespace {

// Append tables are partitioned by UTC day: a fleet query is a time window, and a day holds
// every host's rows of it, so windows prune whole partitions without one partition per host
// (ClickHouse wants partitions in the hundreds, not hosts x days). Inside, rows sort by the
// host key then time: one session's rows are contiguous (what ship's resume check reads) and a
// window inside it is a range. The sort key identifies a row, so the replace engine folds a
// copy sent twice into one — a second guard behind ship's watermarks.
std::string create_statement(const ClickHouse& ch, const TableSpec& t) {
  std::string sql = "CREATE TABLE IF NOT EXISTS " + ch.table(t.name) + " (" + kHostKeyColumns;
  for (const Column& c : t.columns) sql += ", " + c.name + " " + c.type;
  if (t.kind == TableKind::Snapshot) sql += ", ver UInt64";
  sql += ") ENGINE = ReplacingMergeTree(";
  sql += t.kind == TableKind::Snapshot ? "ver" : "";
  sql += ")";
  if (!t.time_column.empty()) sql += " PARTITION BY toYYYYMMDD(toDateTime(intDiv(" + t.time_column + ", 1000000000), 'UTC'))";
  sql += " ORDER BY (" + std::string(kHostKeyNames) + (t.order_by.empty() ? "" : ", " + t.order_by) + ")";
  return sql;
}

// A store laid out by an older causeway lacks the columns added to a table since (schema 3:
// collectives.handle and traced_seq): they are added, the rows already stored reading as the
// type's default (0, ""), so the one ship that upgrades the store needs no copy of any table.
Result<void> add_missing_columns(ClickHouse& ch) {
  auto rows = ch.select("SELECT table, name FROM system.columns WHERE database = " + sql_quote(ch.endpoint().database), {ColumnKind::Text, ColumnKind::Text}, kBookkeepingAnswer);
  if (!rows) return rows.error();
  std::set<std::pair<std::string, std::string>> have;
  for (const auto& r : *rows)
    if (r.size() >= 2) have.insert({r[0], r[1]});
  for (const TableSpec& t : table_specs())
    for (const Column& c : t.columns)
      if (!have.count({t.name, c.name}))
        // 18.16 has no ADD COLUMN IF NOT EXISTS: a concurrent ship that added it first is fine.
        if (auto r = ch.execute("ALTER TABLE " + ch.table(t.name) + " ADD COLUMN " + c.name + " " + c.type);
            !r && r.error().message.find("already exists") == std::string::npos)
          return r.error();
  return {};
}

Result<int> stored_version(ClickHouse& ch) {
  auto rows = ch.select("SELECT max(version) FROM " + ch.table("schema_version"), {ColumnKind::Int}, kWatermarkAnswer);
  if (!rows) return rows.error();
  if (rows->empty() || rows->front().empty()) return 0;
  const int64_t v = to_i64(rows->front()[0]);
  if (v < 0 || v > 1'000'000) return make_error("fleet_bad_answer", "the fleet store's schema version reads " + std::to_string(v) + ": not ClickHouse?");
  return static_cast<int>(v);
}

Error too_new(int v) {
  return make_error("fleet_too_new", "the fleet store was laid out by a newer causeway (fleet schema " + std::to_string(v) +
                                         ", this one knows " + std::to_string(kFleetSchemaVersion) +
                                         "): upgrade causeway; nothing was written");
}

}  // namespace

Result<void> ensure_fleet_schema(ClickHouse& ch) {
  const std::string db = ch.endpoint().database;
  if (auto r = ch.execute("CREATE DATABASE IF NOT EXISTS " + db); !r) return r.error();
  if (auto r = ch.execute("CREATE TABLE IF NOT EXISTS " + ch.table("schema_version") +
                          " (version UInt32, tool_version String, created_ns Int64) ENGINE = MergeTree ORDER BY version");
      !r)
    return r.error();
  auto v = stored_version(ch);
  if (!v) return v.error();
  if (*v > kFleetSchemaVersion) return too_new(*v);
  for (const TableSpec& t : table_specs())
    if (auto r = ch.execute(create_statement(ch, t)); !r) return r.error();
  if (*v < kFleetSchemaVersion)
    if (auto r = add_missing_columns(ch); !r) return r.error();
  // Where each (session, table) stands: the last rowid confirmed (append tables) or the digest
  // of the rows last sent (snapshot tables); the newest `ver` is the one that counts.
  if (auto r = ch.execute("CREATE TABLE IF NOT EXISTS " + ch.table("ship_progress") + " (" + kHostKeyColumns +
                          ", tbl String, upto Int64, digest String, ver UInt64) ENGINE = ReplacingMergeTree(ver) ORDER BY (" +
                          kHostKeyNames + ", tbl)");
      !r)
    return r.error();
  if (*v < kFleetSchemaVersion) {
    auto r = ch.execute("INSERT INTO " + ch.table("schema_version") + " VALUES (" + std::to_string(kFleetSchemaVersion) +
                        ", '" CAUSEWAY_VERSION "', toInt64(now()) * 1000000000)");
    if (!r) return r.error();
  }
  return {};
}

Result<void> check_fleet_schema(ClickHouse& ch) {
  auto v = stored_version(ch);
  if (!v) {
    if (v.error().message.find("doesn't exist") != std::string::npos)
      return make_error("fleet_empty", "no fleet store in database '" + ch.endpoint().database + "' at " + ch.endpoint().url +
                                           ": run `causeway ship --to " + ch.endpoint().url + "` on the hosts first");
    return v.error();
  }
  if (*v > kFleetSchemaVersion) return too_new(*v);
  if (*v > 0 && *v < kFleetSchemaVersion)
    return make_error("fleet_too_old", "the fleet store at " + ch.endpoint().url + " was laid out by an older causeway (fleet schema " +
                                           std::to_string(*v) + ", this one reads " + std::to_string(kFleetSchemaVersion) +
                                           "): run `causeway ship` of this version on the hosts once; it adds what the store lacks");
  if (*v == 0) return make_error("fleet_empty", "the fleet store at " + ch.endpoint().url + " holds no shipped session yet");
  return {};
}

}  // namespace causeway::fleet
