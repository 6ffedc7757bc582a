#include "tracedb/open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <vector>

#include "tracedb/schema.h"
#include "tracedb/stale_read.h"

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

// The DB header says WAL (file format bytes 18/19 = 2): a connection needs the -shm.
bool header_says_wal(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char hdr[20] = {};
  const bool wal = ::pread(fd, hdr, sizeof hdr, 0) == static_cast<ssize_t>(sizeof hdr) && hdr[18] == 2 && hdr[19] == 2;
  ::close(fd);
  return wal;
}

// A reader may make the -shm only in a folder of its own.
bool folder_is_ours(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && st.st_uid == ::geteuid();
}

void warn_stale_once(const std::string& path) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard lock(mu);
  if (warned.insert(path).second) std::cerr << "causeway: warning: " << stale_read_warning(path) << std::endl;
}

}  // namespace

// Makes the missing folders (0700) and the DB file (0600) before SQLite opens it, as the user
// the DB is for: root under sudo writing into the user's folder never follows their links
// with root's rights and never chowns anything (docs/SECURITY.md). SQLite running as root
// gives -wal/-shm the owner of the DB file, and makes them as that user here too.
Result<std::optional<FsUser>> prepare_db_files(const std::string& path) {
  namespace fs = std::filesystem;
  auto as = write_identity_for(path);
  if (!as) return as.error();
  auto scope = AsFsUser::enter(*as);
  if (!scope) return scope.error();
  const std::string who = *as ? " as " + (*as)->name : "";
  fs::path parent = fs::path(path).parent_path();
  std::vector<fs::path> missing;
  struct stat st {};
  for (fs::path p = parent; !p.empty() && ::lstat(p.c_str(), &st) != 0 && p != p.parent_path(); p = p.parent_path())
    missing.push_back(p);
  for (auto it = missing.rbegin(); it != missing.rend(); ++it)
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      return make_error("db_open", "cannot create folder " + it->string() + who + ": " + std::strerror(errno));
  // O_NONBLOCK: a FIFO at the path must not hang the writer (it is refused below).
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == ELOOP)
      return make_error("db_link", path + " is a symbolic link: a trace DB is written only as a plain file at its "
                                          "own path; pass --db with the link's target");
    return make_error("db_open", "cannot open " + path + who + ": " + std::strerror(errno));
  }
  const int fst = ::fstat(fd, &st);
  const int err = errno;
  ::close(fd);
  if (fst != 0) return make_error("db_open", "cannot stat " + path + ": " + std::strerror(err));
  if (!S_ISREG(st.st_mode)) return make_error("db_link", path + " is not a regular file: refusing to write it as a trace DB");
  if (st.st_nlink != 1)
    return make_error("db_link", path + " has " + std::to_string(st.st_nlink) +
                                     " hard links: writing it would change the other names' file too; pass --db PATH "
                                     "of a file with one name");
  const uid_t owner = *as ? (*as)->uid : ::geteuid();
  if (st.st_uid != owner)
    return make_error("db_owner", path + " belongs to " + user_name_of(st.st_uid) + ", not to " + user_name_of(owner) +
                                      ": refusing to write into another user's trace DB; pass --db PATH of your own, "
                                      "or run as that user");
  return *as;
}

Result<WriterDb> open_for_write(const std::string& path) {
  auto as = prepare_db_files(path);
  if (!as) return as.error();
  // Every file SQLite makes from here on (-wal, -shm, -journal) is made as that user too.
  auto scope = AsFsUser::enter(*as);
  if (!scope) return scope.error();
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
  return WriterDb{std::move(*db), *as};
}

Result<DbHandle> open_read_only(const std::string& path) {
  if (!file_exists(path))
    return make_error("db_missing", "no trace DB at " + path +
                                        ": run `causeway demo` or `causeway trace` first, or pass --db / set CAUSEWAY_DB");
  if (::access(path.c_str(), R_OK) != 0)
    return make_error("db_open", "cannot read " + path + ": " + std::strerror(errno));
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  // SQLite would make a missing -shm of a WAL DB, as whoever we are (root: anywhere).
  const bool would_make_shm = header_says_wal(path) && !file_exists(path + "-shm") && !folder_is_ours(path);
  if (!would_make_shm) {
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
  }
  // A WAL database without a -shm we may use: immutable=1 reads the DB file alone. Exact when
  // no writer is live (it would have made the -shm) and the -wal holds nothing the DB file
  // lacks; otherwise the answers are stale, and the connection says so.
  const bool stale = wal_has_unmerged_commits(path);
  auto imm = open_with("file:" + uri_escape(path) + "?immutable=1" + (stale ? std::string("&") + kStaleUriParam + "=1" : ""),
                       flags);
  if (!imm) return imm.error();
  if (auto r = check_identity(imm->get(), path, false); !r) return r.error();
  if (stale) warn_stale_once(path);
  return imm;
}

void close_writer_cleanly(WriterDb& w) {
  if (!w) return;
  // Leaving WAL mode removes the -wal and -shm: as the user who owns them.
  auto scope = AsFsUser::enter(w.as);
  if (scope) (void)exec_sql(w.get(), "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;");
  else (void)sqlite3_db_config(w.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  w.reset();
}

}  // namespace causeway
