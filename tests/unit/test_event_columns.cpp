// One column list for `events` (tracedb/event_columns.h, tracedb/event_row.h): the writer's
// INSERT and bind order and the readers' SELECT and decode come from it, match the real table,
// and every column — cgroup_id included — round-trips through a real SQLite file.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "tracedb/event_row.h"
#include "tracedb/open.h"
#include "tracedb/table_columns.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using causeway::test::TempDir;

namespace {

constexpr int64_t kT0 = 1'790'000'000'000'000'000;

// Every field distinct and non-zero, so a column read into the wrong field shows.
CallRecord full_call(int64_t i) {
  CallRecord r;
  r.ts_ns = kT0 + i * 1000;
  r.dur_ns = 700 + i;
  r.pid = 4821 + static_cast<uint32_t>(i);
  r.tid = 4900 + static_cast<uint32_t>(i);
  r.op = 116;
  r.cpu = 3 + static_cast<int32_t>(i);
  r.ret = -11 - i;
  r.a = {101 + i, 0x7f3a60000000 + i, 103 + i, -104 - i, 105 + i, 106 + i};
  r.stack_hash = 0x1234567890abcdefULL + static_cast<uint64_t>(i);
  r.cgroup_id = 0x1000000000000abcULL + static_cast<uint64_t>(i);
  return r;
}

// The same call with every "none": unknown CPU, no stack, no cgroup id.
CallRecord bare_call(int64_t i) {
  CallRecord r = full_call(i);
  r.cpu = -1;
  r.stack_hash = 0;
  r.cgroup_id = 0;
  return r;
}

void check_same(const CallRecord& got, const CallRecord& want) {
  CHECK(got.ts_ns == want.ts_ns);
  CHECK(got.dur_ns == want.dur_ns);
  CHECK(got.pid == want.pid);
  CHECK(got.tid == want.tid);
  CHECK(got.op == want.op);
  CHECK(got.cpu == want.cpu);
  CHECK(got.ret == want.ret);
  CHECK(got.a == want.a);
  CHECK(got.stack_hash == want.stack_hash);
  CHECK(got.cgroup_id == want.cgroup_id);
}

// A trace DB with the real schema and no rows, as the writer creates it.
std::string fresh_db(const TempDir& dir) {
  const std::string path = dir.file("t.db");
  auto w = StoreWriter::open(path);
  REQUIRE(w.ok());
  REQUIRE((*w)->close(kT0).ok());
  return path;
}

std::vector<EventRow> read_all(const std::string& path) {
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  auto st = Statement::prepare(db->get(), "SELECT " + kAllEventColumns.sql() + " FROM events ORDER BY id");
  REQUIRE(st.ok());
  std::vector<EventRow> rows;
  while (st->step() == SQLITE_ROW) rows.push_back(decode_event(st->get(), kAllEventColumns));
  return rows;
}

}  // namespace

TEST_CASE("the INSERT and SELECT lists are the one list, in the real table's order and nullability") {
  const std::string insert_cols = event_column_list(kFirstInsertCol);
  CHECK(event_select_list() == "id, " + insert_cols);
  CHECK(kAllEventColumns.sql() == event_select_list());
  CHECK(event_insert_sql(2) == "INSERT INTO events (" + insert_cols + ") VALUES " + "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)," +
                                   "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  CHECK(insert_cols.find("cgroup_id") != std::string::npos);

  TempDir dir;
  auto db = open_read_only(fresh_db(dir));
  REQUIRE(db.ok());
  auto st = Statement::prepare(db->get(), "SELECT name, \"notnull\", pk FROM pragma_table_info('events') ORDER BY cid");
  REQUIRE(st.ok());
  size_t i = 0;
  while (st->step() == SQLITE_ROW) {
    REQUIRE(i < kEventColumns.size());
    CHECK(st->col_text(0) == std::string(kEventColumns[i].name));
    // A nullable column is one the table lets hold NULL (the INTEGER PRIMARY KEY never does).
    CHECK(kEventColumns[i].nullable == (st->col_int(1) == 0 && st->col_int(2) == 0));
    ++i;
  }
  CHECK(i == kEventColumns.size());
}

TEST_CASE("every column, cgroup_id included, round-trips through the writer and a real SQLite file") {
  TempDir dir;
  const std::string path = dir.file("t.db");
  std::vector<CallRecord> sent;
  int64_t sid = 0;
  {
    auto w = StoreWriter::open(path);
    REQUIRE(w.ok());
    SessionInfo info;
    info.source_kind = "live";
    info.started_ns = kT0;
    auto s = (*w)->begin_session(info);
    REQUIRE(s.ok());
    sid = *s;
    // 130 rows: two 64-row INSERTs and single-row ones, both statements the writer uses.
    for (int64_t i = 0; i < 130; ++i) sent.push_back(i % 2 ? bare_call(i) : full_call(i));
    for (const CallRecord& r : sent) REQUIRE((*w)->push(r));
    REQUIRE((*w)->close(kT0 + 1'000'000'000).ok());
  }
  const std::vector<EventRow> got = read_all(path);
  REQUIRE(got.size() == sent.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].session_id == sid);
    CHECK(got[i].id > 0);
    check_same(got[i].call, sent[i]);
  }
  // "None" is stored as NULL, not as 0 or -1.
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  CHECK(query_int(db->get(), "SELECT count(*) FROM events WHERE cgroup_id IS NULL AND stack_id IS NULL AND cpu IS NULL")
            ->value_or(-1) == 65);
  const std::string first_cgroup = std::to_string(static_cast<int64_t>(full_call(0).cgroup_id));
  CHECK(query_int(db->get(), "SELECT count(*) FROM events WHERE cgroup_id = " + first_cgroup)->value_or(-1) == 1);
}

TEST_CASE("bind_event fills a multi-row INSERT; a subset SELECT decodes only its columns") {
  TempDir dir;
  const std::string path = fresh_db(dir);
  {
    auto db = open_for_write(path);
    REQUIRE(db.ok());
    auto ins = Statement::prepare(db->get(), event_insert_sql(2));
    REQUIRE(ins.ok());
    bind_event(*ins, 0, 7, full_call(1));
    bind_event(*ins, kEventInsertColumns, 7, bare_call(2));
    REQUIRE(ins->step() == SQLITE_DONE);
  }
  const std::vector<EventRow> got = read_all(path);
  REQUIRE(got.size() == 2);
  check_same(got[0].call, full_call(1));
  check_same(got[1].call, bare_call(2));
  CHECK(got[1].session_id == 7);

  auto db = open_read_only(path);
  REQUIRE(db.ok());
  constexpr EventColumns<3> kCols{{EventCol::cgroup_id, EventCol::pid, EventCol::cpu}};
  auto st = Statement::prepare(db->get(), "SELECT " + kCols.sql() + " FROM events ORDER BY id");
  REQUIRE(st.ok());
  REQUIRE(st->step() == SQLITE_ROW);
  const EventRow r = decode_event(st->get(), kCols);
  CHECK(r.call.cgroup_id == full_call(1).cgroup_id);
  CHECK(r.call.pid == full_call(1).pid);
  CHECK(r.call.cpu == full_call(1).cpu);
  CHECK(r.call.ts_ns == 0);  // not selected: left at its default
  CHECK(kCols.at(EventCol::cpu) == 2);
  CHECK(kCols.at(EventCol::ts_ns) == -1);
}

// The other tables' column lists (tracedb/table_columns.h): the INSERT is built from the list
// and each column binds at its place in it.
namespace {
enum class TinyCol { a, b, c, count_ };
constexpr TableColumns<TinyCol> kTinyColumns{"tiny", {"a", "b", "c"}};
}  // namespace

TEST_CASE("a table's column list gives its INSERT and binds each column by name") {
  CHECK(kTinyColumns.insert_sql() == "INSERT INTO tiny (a, b, c) VALUES (?,?,?)");
  CHECK(kTinyColumns.insert_sql("INSERT OR IGNORE", TinyCol::c) == "INSERT OR IGNORE INTO tiny (a, b) VALUES (?,?)");
  CHECK(RowBind<TinyCol>::param(TinyCol::c) == 3);
  TempDir dir;
  DbHandle db;
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open((dir.path() + "/t.db").c_str(), &h) == SQLITE_OK);
  db.reset(h);
  REQUIRE(exec_sql(h, "CREATE TABLE tiny (a INTEGER, b TEXT, c INTEGER)").ok());
  auto st = Statement::prepare(h, kTinyColumns.insert_sql());
  REQUIRE(st.ok());
  // Bound out of order, with "none" values: each lands in its own column.
  RowBind<TinyCol>(*st).set_nonempty(TinyCol::b, "").set(TinyCol::c, int64_t{7}).set_nonzero(TinyCol::a, 0);
  REQUIRE(st->step() == SQLITE_DONE);
  auto q = Statement::prepare(h, "SELECT a IS NULL, b IS NULL, c FROM tiny");
  REQUIRE(q.ok());
  REQUIRE(q->step() == SQLITE_ROW);
  CHECK(q->col_int(0) == 1);
  CHECK(q->col_int(1) == 1);
  CHECK(q->col_int(2) == 7);
}
