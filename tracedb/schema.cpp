#include "tracedb/schema.h"

#include <string_view>

#include "tracedb/sqlite_handle.h"

namespace causeway {

extern const char* const kTraceSchemaSql;  // generated from schemas/trace.sql

namespace {

std::vector<Migration> split_migrations(std::string_view text) {
  // Markers start a line; the header comment mentions the marker mid-line.
  static constexpr std::string_view kMarker = "\n-- @migration ";
  std::vector<Migration> out;
  size_t pos = text.find(kMarker);
  while (pos != std::string_view::npos) {
    size_t num_start = pos + kMarker.size();
    size_t line_end = text.find('\n', num_start);
    int version = std::stoi(std::string(text.substr(num_start, line_end - num_start)));
    size_t next = text.find(kMarker, line_end);
    std::string_view body = text.substr(line_end, next == std::string_view::npos ? text.size() - line_end : next - line_end);
    out.push_back(Migration{version, std::string(body)});
    pos = next;
  }
  return out;
}

}  // namespace

const std::vector<Migration>& schema_migrations() {
  static const std::vector<Migration> migrations = split_migrations(kTraceSchemaSql);
  return migrations;
}

int latest_schema_version() { return schema_migrations().back().version; }

Result<void> migrate(sqlite3* db, int target) {
  if (target < 0) target = latest_schema_version();
  auto current = query_int(db, "PRAGMA user_version");
  if (!current) return current.error();
  int version = static_cast<int>(current->value_or(0));
  if (version > latest_schema_version())
    return make_error("db_too_new", "trace DB schema version " + std::to_string(version) +
                                        " is newer than this causeway supports (" +
                                        std::to_string(latest_schema_version()) + "): upgrade causeway");
  for (const Migration& m : schema_migrations()) {
    if (m.version <= version || m.version > target) continue;
    std::string sql = "BEGIN IMMEDIATE;\n" + m.sql + "\nPRAGMA user_version = " + std::to_string(m.version) +
                      ";\nPRAGMA application_id = " + std::to_string(kApplicationId) + ";\nCOMMIT;";
    if (auto r = exec_sql(db, sql); !r) {
      (void)exec_sql(db, "ROLLBACK");
      return make_error("db_migrate", "migrating trace DB to schema version " + std::to_string(m.version) +
                                          " failed: " + r.error().message);
    }
  }
  return {};
}

}  // namespace causeway
