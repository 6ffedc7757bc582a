#include "importers/ingero_source.h"

#include <sys/stat.h>

#include <cstdio>

#include <vector>

namespace causeway {
namespace {

// URI form of a path for immutable=1: characters with a meaning in URIs are escaped.
std::string file_uri(const std::string& path, const char* query) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '?' || c == '#' || c == '%' || c < 0x20) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      uri += buf;
    } else {
      uri += static_cast<char>(c);
    }
  }
  return uri + "?" + query;
}

Result<DbHandle> open_with(const std::string& name, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(name.c_str(), &raw, flags, nullptr);
  DbHandle db(raw);
  if (rc != SQLITE_OK)
    return make_error("import_open", "cannot open the file: " + std::string(raw ? sqlite3_errmsg(raw) : "out of memory"));
  return db;
}

// Column names of a table; empty when the table does not exist.
Result<std::set<std::string>> columns_of(sqlite3* db, const std::string& table) {
  auto st = Statement::prepare(db, "SELECT name FROM pragma_table_info(?)");
  if (!st) return st.error();
  st->bind(1, table);
  std::set<std::string> cols;
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) cols.insert(st->col_text(0));
  if (rc != SQLITE_DONE) return make_error("import_open", "cannot read the file's schema: " + sqlite_error_text(db));
  return cols;
}

Result<void> require(const std::set<std::string>& have, const std::string& table,
                     const std::vector<std::string>& needed) {
  if (have.empty())
    return make_error("import_foreign", "not an ingero trace: it has no '" + table +
                                            "' table (expected ingero's events, sources and ops tables)");
  for (const auto& c : needed)
    if (!have.count(c))
      return make_error("import_foreign", "not an ingero trace: table '" + table + "' has no column '" + c + "'");
  return {};
}

}  // namespace

Result<IngeroSource> IngeroSource::open(const std::string& path) {
  struct stat sb{};
  if (::stat(path.c_str(), &sb) != 0) return make_error("import_missing", "no such file: " + path);
  if (!S_ISREG(sb.st_mode)) return make_error("import_foreign", path + " is not a regular file");

  // A foreign trace is a copy taken off a host, not a live DB: immutable=1 reads it without
  // creating -shm/-wal beside it (a plain read-only open of a WAL file does, even in a
  // read-only folder when run as root). Only when a non-empty -wal travels with the file
  // must SQLite read it, so then the plain read-only open comes first.
  struct stat wal{};
  bool has_wal = ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
  auto db = has_wal ? open_with(path, SQLITE_OPEN_READONLY)
                    : open_with(file_uri(path, "immutable=1"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  if (!db) return db.error();
  auto probe = query_int(db->get(), "SELECT count(*) FROM sqlite_master");
  if (!probe) {
    int code = sqlite3_errcode(db->get()) & 0xff;
    if (code == SQLITE_NOTADB) return make_error("import_foreign", path + " is not a SQLite database (nor an ingero trace)");
    db = open_with(file_uri(path, "immutable=1"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
    if (!db) return db.error();
    probe = query_int(db->get(), "SELECT count(*) FROM sqlite_master");
    if (!probe) {
      code = sqlite3_errcode(db->get()) & 0xff;
      if (code == SQLITE_NOTADB) return make_error("import_foreign", path + " is not a SQLite database (nor an ingero trace)");
      return make_error("import_open", "cannot read " + path + ": " + probe.error().message);
    }
  }
  sqlite3* h = db->get();

  // A causeway DB has an events table too; say what it is instead of a column complaint.
  auto blocks = columns_of(h, "event_blocks");
  if (!blocks) return blocks.error();
  if (!blocks->empty())
    return make_error("import_foreign", path + " is a causeway trace DB, not an ingero trace: open it with --db instead");

  IngeroLayout layout;
  auto ev = columns_of(h, "events");
  if (!ev) return ev.error();
  if (auto r = require(*ev, "events", {"timestamp", "pid", "tid", "source", "op", "duration"}); !r) return r.error();
  layout.event_columns = *ev;
  auto ops = columns_of(h, "ops");
  if (!ops) return ops.error();
  if (auto r = require(*ops, "ops", {"source_id", "op_id", "name"}); !r) return r.error();
  auto sources = columns_of(h, "sources");
  if (!sources) return sources.error();
  if (auto r = require(*sources, "sources", {"id", "name"}); !r) return r.error();
  auto stacks = columns_of(h, "stack_traces");
  if (!stacks) return stacks.error();
  layout.has_stacks = stacks->count("hash") && stacks->count("frames");
  auto names = columns_of(h, "process_names");
  if (!names) return names.error();
  layout.has_process_names = names->count("pid") && names->count("name");
  auto sess = columns_of(h, "sessions");
  if (!sess) return sess.error();
  layout.has_sessions = sess->count("started_at") > 0;
  layout.session_columns = *sess;

  IngeroSource src(std::move(*db), std::move(layout));
  auto st = Statement::prepare(h, "SELECT source_id, op_id, name FROM ops");
  if (!st) return st.error();
  while (st->step() == SQLITE_ROW) src.op_names_[{st->col_int(0), st->col_int(1)}] = st->col_text(2);
  auto ss = Statement::prepare(h, "SELECT id, name FROM sources");
  if (!ss) return ss.error();
  while (ss->step() == SQLITE_ROW) src.source_names_[ss->col_int(0)] = ss->col_text(1);
  return src;
}

}  // namespace causeway
