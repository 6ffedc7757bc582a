// Schema versioning and the reader/writer opening rules of the trace DB.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/schema.h"

using namespace causeway;
using causeway::test::TempDir;

namespace {

DbHandle raw_open(const std::string& path) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(path.c_str(), &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  return DbHandle(h);
}

int64_t int_of(sqlite3* db, const char* sql) { return query_int(db, sql)->value_or(-1); }

}  // namespace

TEST_CASE("the embedded schema has consecutive migrations ending at the latest version") {
  const auto& ms = schema_migrations();
  REQUIRE(ms.size() >= 2);
  for (size_t i = 0; i < ms.size(); ++i) CHECK(ms[i].version == static_cast<int>(i + 1));
  CHECK(latest_schema_version() == ms.back().version);
}

TEST_CASE("a fresh DB is created by the writer at the latest version in WAL mode") {
  TempDir dir;
  std::string path = dir.file("sub/folder/trace.db");
  auto db = open_for_write(path);
  REQUIRE(db.ok());
  CHECK(int_of(db->get(), "PRAGMA user_version") == latest_schema_version());
  CHECK(int_of(db->get(), "PRAGMA application_id") == kApplicationId);
  CHECK(int_of(db->get(), "PRAGMA auto_vacuum") == 2);  // incremental
  {
    auto mode = Statement::prepare(db->get(), "PRAGMA journal_mode");
    REQUIRE(mode->step() == SQLITE_ROW);
    CHECK(mode->col_text(0) == "wal");
  }
  close_writer_cleanly(*db);
  // After a clean close the file is back in rollback mode: a copy needs no -wal/-shm.
  auto ro = open_read_only(path);
  REQUIRE(ro.ok());
  auto mode2 = Statement::prepare(ro->get(), "PRAGMA journal_mode");
  REQUIRE(mode2->step() == SQLITE_ROW);
  CHECK(mode2->col_text(0) == "delete");
}

TEST_CASE("a version-1 DB with data is migrated forward by the writer, data intact") {
  TempDir dir;
  std::string path = dir.file("old.db");
  {
    DbHandle h = raw_open(path);
    REQUIRE(migrate(h.get(), 1).ok());
    REQUIRE(exec_sql(h.get(),
                     "INSERT INTO sessions (source_kind, tool_version, started_ns) VALUES ('live', '0.0.1', 1000);"
                     "INSERT INTO ops VALUES (116, 'cuda', 'cudaStreamSynchronize', 'call', '');"
                     "INSERT INTO events (session_id, ts_ns, dur_ns, pid, tid, op_id) VALUES (1, 2000, 500, 7, 7, 116);")
                .ok());
    CHECK(int_of(h.get(), "PRAGMA user_version") == 1);
  }
  // A reader refuses the old DB (it never migrates) and says how to upgrade.
  auto ro = open_read_only(path);
  REQUIRE_FALSE(ro.ok());
  CHECK(ro.error().code == "db_too_old");
  CHECK(ro.error().message.find("causeway migrate") != std::string::npos);

  auto w = open_for_write(path);
  REQUIRE(w.ok());
  CHECK(int_of(w->get(), "PRAGMA user_version") == latest_schema_version());
  CHECK(int_of(w->get(), "SELECT count(*) FROM events") == 1);
  CHECK(int_of(w->get(), "SELECT dur_us * 1000 FROM v_calls") == 500);  // view from migration 2 sees old rows
  CHECK(int_of(w->get(), "SELECT count(*) FROM schema_docs") > 20);
}

TEST_CASE("a DB newer than this binary is refused by writer and reader alike") {
  TempDir dir;
  std::string path = dir.file("future.db");
  {
    auto w = open_for_write(path);
    REQUIRE(w.ok());
    REQUIRE(exec_sql(w->get(), "PRAGMA user_version = 99").ok());
    close_writer_cleanly(*w);
  }
  auto before = test::read_file(path);
  auto w = open_for_write(path);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().code == "db_too_new");
  CHECK(w.error().message.find("upgrade causeway") != std::string::npos);
  auto r = open_read_only(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "db_too_new");
  CHECK(test::read_file(path) == before);  // refusing touched nothing
}

TEST_CASE("readers never create a DB; missing, foreign and corrupt files get clear errors") {
  TempDir dir;
  auto missing = open_read_only(dir.file("nope.db"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == "db_missing");
  CHECK_FALSE(test::file_exists(dir.file("nope.db")));

  std::string foreign = dir.file("foreign.db");
  {
    DbHandle h = raw_open(foreign);
    REQUIRE(exec_sql(h.get(), "CREATE TABLE customers (id INTEGER)").ok());
  }
  CHECK(open_read_only(foreign).error().code == "db_foreign");
  CHECK(open_for_write(foreign).error().code == "db_foreign");

  std::string corrupt = dir.file("corrupt.db");
  {
    FILE* f = std::fopen(corrupt.c_str(), "wb");
    std::string junk(8192, 'x');
    std::fwrite(junk.data(), 1, junk.size(), f);
    std::fclose(f);
  }
  CHECK(open_read_only(corrupt).error().code == "db_corrupt");
  CHECK(open_for_write(corrupt).error().code == "db_corrupt");
}

TEST_CASE("a reader's connection cannot write") {
  TempDir dir;
  std::string path = dir.file("t.db");
  {
    auto w = open_for_write(path);
    REQUIRE(w.ok());
    close_writer_cleanly(*w);
  }
  auto r = open_read_only(path);
  REQUIRE(r.ok());
  CHECK_FALSE(exec_sql(r->get(), "INSERT INTO sessions (source_kind, tool_version, started_ns) VALUES ('live','x',1)").ok());
  CHECK(sqlite3_db_readonly(r->get(), "main") == 1);
}
