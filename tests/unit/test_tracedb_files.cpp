// What a writer refuses to open as its DB, and when a read-only open is stale
// (docs/SECURITY.md "Root writing into a user's folder", "Stale reads").
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/stale_read.h"

using namespace causeway;
using causeway::test::TempDir;

TEST_CASE("a writer makes missing folders 0700 and the DB 0600") {
  TempDir dir;
  const std::string path = dir.file("a/b/trace.db");
  auto w = open_for_write(path);
  REQUIRE(w.ok());
  struct stat st {};
  REQUIRE(::stat(dir.file("a").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  close_writer_cleanly(*w);
}

TEST_CASE("a writer refuses a DB that is a symbolic link, a FIFO or a file with other hard links") {
  TempDir dir;
  const std::string target = dir.file("target.db");
  REQUIRE(open_for_write(target).ok());

  const std::string link = dir.file("link.db");
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  auto r = open_for_write(link);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "db_link");

  const std::string fifo = dir.file("fifo.db");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  r = open_for_write(fifo);  // returns at once: opened O_NONBLOCK, then refused
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "db_link");

  const std::string second = dir.file("second.db");
  REQUIRE(::link(target.c_str(), second.c_str()) == 0);
  r = open_for_write(second);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == "db_link");
  CHECK(r.error().message.find("2 hard links") != std::string::npos);
}

TEST_CASE("a -wal is stale for an immutable reader only while it holds commits the DB file lacks") {
  TempDir dir;
  const std::string path = dir.file("trace.db");
  {
    auto w = open_for_write(path);
    REQUIRE(w.ok());
    close_writer_cleanly(*w);
  }
  CHECK_FALSE(wal_has_unmerged_commits(path));  // rollback mode: no -wal at all
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  DbHandle db(raw);
  REQUIRE(exec_sql(raw, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;").ok());
  const auto add_session = [&](const std::string& prefix, const char* label) {
    return exec_sql(raw, prefix + "INSERT INTO sessions (source_kind, label, tool_version, started_ns) VALUES "
                                  "('demo', '" + label + "', 'test', 1)")
        .ok();
  };
  REQUIRE(add_session("", "x"));
  CHECK(wal_has_unmerged_commits(path));
  REQUIRE(exec_sql(raw, "PRAGMA wal_checkpoint(PASSIVE)").ok());
  CHECK_FALSE(wal_has_unmerged_commits(path));  // same pages in the DB file now
  REQUIRE(add_session("", "y"));
  CHECK(wal_has_unmerged_commits(path));
  // A transaction not committed yet is nothing a reader would miss.
  REQUIRE(exec_sql(raw, "PRAGMA wal_checkpoint(PASSIVE)").ok());
  REQUIRE(add_session("BEGIN; ", "z"));
  CHECK_FALSE(wal_has_unmerged_commits(path));
  REQUIRE(exec_sql(raw, "ROLLBACK").ok());
}
