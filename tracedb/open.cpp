#include "tracedb/open.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/db_path.h"
#include "tracedb/schema.h"

namespace causeway {
namespace {

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Checks application_id/user_version of an opened DB; `writer` allows a fresh empty file.
Result<void> check_identity(sqlite3* db, const std::string& path, bool writer) {
  auto app = query_int(db, "PRAGMA application_id");
  if (!app) {
    int code = sqlite3_errcode(db);
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
      return make_error("db_corrupt", path + " is not a SQLite database or is corrupt: " + app.error().message);
    return make_error("db_open", "cannot read " + path + ": " + app.error().message);
  }
  auto version = query_int(db, "PRAGMA user_version");
  if (!version) return make_error("db_open", "cannot read " + path + ": " + version.error().message);
  int64_t app_id = app->value_or(0);
  int64_t v = version->value_or(0);
  if (app_id != kApplicationId) {
    auto tables = query_int(db, "SELECT count(*) FROM sqlite_master");
    bool empty = tables && tables->value_or(0) == 0;
    if (!(writer && empty && app_id == 0))
      return make_error("db_foreign", path + " is a SQLite database but not a causeway trace DB" +
                                          std::string(writer ? "; refusing to write into it" : ""));
  }
  if (v > latest_schema_version())
    return make_error("db_too_new", path + " has trace DB schema version " + std::to_string(v) +
                                        ", newer than this causeway supports (" +
                                        std::to_string(latest_schema_version()) + "): upgrade causeway");
  if (!writer && v < latest_schema_version())
    return make_error("db_too_old", path + " has trace DB schema version " + std::to_string(v) + " (current is " +
                                        std::to_string(latest_schema_version()) +
                                        "): run `causeway migrate --db " + path + "` to upgrade it");
  return {};
}

Result<DbHandle> open_with(const std::string& uri_or_path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(uri_or_path.c_str(), &raw, flags, nullptr);
  DbHandle db(raw);
  if (rc != SQLITE_OK)
    return make_error("db_open", "cannot open " + uri_or_path + ": " + (raw ? sqlite_error_text(raw) : sqlite3_errstr(rc)));
  sqlite3_extended_result_codes(raw, 1);
  return db;
}

std::string uri_escape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string user_name(uid_t uid) {
  std::vector<char> buf(16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found) return pw.pw_name;
  return "uid " + std::to_string(uid);
}

}  // namespace

// Makes the missing folders (0700) and the DB file (0600) before SQLite opens it. Under sudo
// they belong to the invoking user when the nearest existing folder is theirs (the default
// path, or any --db in their own tree); SQLite running as root gives -wal/-shm the owner of
// the DB file. A DB owned by someone other than us or the sudo invoker is refused: writing
// into it would silently take over another user's file.
Result<void> prepare_db_files(const std::string& path) {
  namespace fs = std::filesystem;
  const auto inv = sudo_invoker();
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (st.st_uid != ::geteuid() && !(inv && st.st_uid == inv->uid))
      return make_error("db_owner", path + " belongs to " + user_name(st.st_uid) +
                                        ", not to you: refusing to write into another user's trace DB; pass --db PATH "
                                        "of your own, or run as that user");
    return {};
  }
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::vector<fs::path> missing;
  fs::path existing = parent;
  while (::stat(existing.c_str(), &st) != 0 && existing.has_parent_path() && existing != existing.parent_path()) {
    missing.push_back(existing);
    existing = existing.parent_path();
  }
  const bool for_invoker = inv && ::stat(existing.c_str(), &st) == 0 && st.st_uid == inv->uid;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      return make_error("db_open", "cannot create folder " + it->string() + ": " + std::strerror(errno));
    if (for_invoker && ::chown(it->c_str(), inv->uid, inv->gid) != 0)
      return make_error("db_open", "cannot give " + it->string() + " to " + inv->name + ": " + std::strerror(errno));
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return prepare_db_files(path);  // another writer made it meanwhile: check its owner
    return make_error("db_open", "cannot create " + path + ": " + std::strerror(errno));
  }
  int rc = for_invoker ? ::fchown(fd, inv->uid, inv->gid) : 0;
  int err = errno;
  ::close(fd);
  if (rc != 0) return make_error("db_open", "cannot give " + path + " to " + inv->name + ": " + std::strerror(err));
  return {};
}

Result<DbHandle> open_for_write(const std::string& path) {
  if (auto r = prepare_db_files(path); !r) return r.error();
  auto db = open_with(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
  if (!db) return db.error();
  sqlite3* h = db->get();
  sqlite3_busy_timeout(h, 5000);
  if (auto r = check_identity(h, path, true); !r) return r.error();
  // auto_vacuum must be chosen before the first table exists: INCREMENTAL lets --max-db
  // pruning hand pages back to the file system. A new DB is an empty file (prepare_db_files
  // made it, maybe in an earlier call): zero pages.
  if (auto pages = query_int(h, "PRAGMA page_count"); pages && pages->value_or(0) == 0)
    (void)exec_sql(h, "PRAGMA auto_vacuum = INCREMENTAL");
  // A 4 MiB page cache: the writer appends (events by rowid, sched/wakeups by ts), so it only
  // needs the right-hand edge of each B-tree; 8 MiB wrote no faster and cost 4 MB of RSS.
  if (auto r = exec_sql(h,
                        "PRAGMA journal_mode = WAL;"
                        "PRAGMA synchronous = NORMAL;"
                        "PRAGMA journal_size_limit = 16777216;"
                        "PRAGMA cache_size = -4096;"
                        "PRAGMA temp_store = MEMORY;");
      !r)
    return make_error("db_open", "cannot configure " + path + ": " + r.error().message);
  if (auto r = migrate(h); !r) return r.error();
  return db;
}

Result<DbHandle> open_read_only(const std::string& path) {
  if (!file_exists(path))
    return make_error("db_missing", "no trace DB at " + path +
                                        ": run `causeway demo` or `causeway trace` first, or pass --db / set CAUSEWAY_DB");
  if (::access(path.c_str(), R_OK) != 0)
    return make_error("db_open", "cannot read " + path + ": " + std::strerror(errno));
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  auto db = open_with("file:" + uri_escape(path), flags);
  if (db) {
    sqlite3_busy_timeout(db->get(), 2000);
    auto probe = query_int(db->get(), "PRAGMA application_id");
    if (probe) {
      if (auto r = check_identity(db->get(), path, false); !r) return r.error();
      return db;
    }
    int code = sqlite3_errcode(db->get());
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
      return make_error("db_corrupt", path + " is not a SQLite database or is corrupt");
  }
  // A WAL database in a folder we cannot write: no -shm can be made. Without a live writer
  // (which would have created -shm) the file is self-contained, so immutable=1 is exact.
  auto imm = open_with("file:" + uri_escape(path) + "?immutable=1", flags);
  if (!imm) return imm.error();
  if (auto r = check_identity(imm->get(), path, false); !r) return r.error();
  return imm;
}

void close_writer_cleanly(DbHandle& db) {
  if (!db) return;
  (void)exec_sql(db.get(), "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;");
  db.reset();
}

}  // namespace causeway
