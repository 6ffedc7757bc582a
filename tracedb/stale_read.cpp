#include "tracedb/stale_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/unique_fd.h"

namespace causeway {
namespace {

// The WAL format (sqlite.org/fileformat2.html "WAL File Format"): a 32-byte header, then
// frames of a 24-byte header and one page. Fields are big-endian; the checksums are over
// 32-bit words in the byte order the magic's low bit names, each seeded by the one before.
constexpr uint32_t kWalMagic = 0x377f0682;
constexpr size_t kWalHeader = 32, kFrameHeader = 24;

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint32_t le32(const uint8_t* p) {
  return (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | uint32_t{p[0]};
}

struct Checksum {
  uint32_t s1 = 0, s2 = 0;
  void add(const uint8_t* p, size_t n, bool big_endian) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      s1 += (big_endian ? be32(p + i) : le32(p + i)) + s2;
      s2 += (big_endian ? be32(p + i + 4) : le32(p + i + 4)) + s1;
    }
  }
};

// Never through a link, never held by a FIFO planted at the name.
UniqueFd open_for_read(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
}

// Exactly n bytes at `off`, or false.
bool read_at(const UniqueFd& fd, uint8_t* buf, size_t n, uint64_t off) {
  return ::pread(fd.get(), buf, n, static_cast<off_t>(off)) == static_cast<ssize_t>(n);
}

}  // namespace

bool wal_has_unmerged_commits(const std::string& db_path) {
  struct stat st {};
  if (::lstat((db_path + "-wal").c_str(), &st) != 0) return false;
  if (!S_ISREG(st.st_mode)) return true;
  const UniqueFd wal = open_for_read(db_path + "-wal");
  if (!wal) return true;
  uint8_t hdr[kWalHeader];
  if (!read_at(wal, hdr, sizeof hdr, 0)) return false;  // empty or torn header: SQLite ignores it too
  const uint32_t magic = be32(hdr);
  if ((magic & ~1u) != kWalMagic) return false;
  const bool big = (magic & 1) != 0;
  const uint32_t page = be32(hdr + 8);
  if (page < 512 || page > 65536 || (page & (page - 1))) return false;
  Checksum sum;
  sum.add(hdr, 24, big);
  if (sum.s1 != be32(hdr + 24) || sum.s2 != be32(hdr + 28)) return false;
  const uint32_t salt1 = be32(hdr + 16), salt2 = be32(hdr + 20);

  // The last committed version of each page, and the DB size in pages after that commit.
  std::map<uint32_t, uint64_t> committed, pending;
  uint32_t db_pages = 0;
  std::vector<uint8_t> frame(kFrameHeader + page);
  for (uint64_t off = kWalHeader; read_at(wal, frame.data(), frame.size(), off); off += frame.size()) {
    const uint8_t* fh = frame.data();
    if (be32(fh + 8) != salt1 || be32(fh + 12) != salt2) break;
    Checksum next = sum;
    next.add(fh, 8, big);
    next.add(fh + kFrameHeader, page, big);
    if (next.s1 != be32(fh + 16) || next.s2 != be32(fh + 20)) break;
    sum = next;
    pending[be32(fh)] = off + kFrameHeader;
    if (const uint32_t size_after = be32(fh + 4); size_after != 0) {
      for (const auto& [pgno, at] : pending) committed[pgno] = at;
      pending.clear();
      db_pages = size_after;
    }
  }
  if (committed.empty()) return false;
  const UniqueFd db = open_for_read(db_path);
  struct stat dbst {};
  if (!db || ::fstat(db.get(), &dbst) != 0) return true;
  if (static_cast<uint64_t>(dbst.st_size) / page != db_pages) return true;
  std::vector<uint8_t> in_wal(page), in_db(page);
  for (const auto& [pgno, at] : committed) {
    if (pgno == 0 || pgno > db_pages) continue;  // beyond the committed size: truncated away
    if (!read_at(wal, in_wal.data(), page, at) || !read_at(db, in_db.data(), page, uint64_t{pgno - 1} * page) ||
        in_wal != in_db)
      return true;
  }
  return false;
}

bool read_is_stale(sqlite3* db) {
  const char* name = db ? sqlite3_db_filename(db, "main") : nullptr;
  return name && sqlite3_uri_boolean(name, kStaleUriParam, 0);
}

std::string stale_read_warning(const std::string& path) {
  return path + ": committed data newer than the DB file is only in " + path +
         "-wal, which this reader cannot use (no " + path +
         "-shm exists, and none is made in a folder that is not yours): answers may miss the latest writes; "
         "read it as the DB's owner, or copy the DB with its -wal into a folder of your own";
}

void note_stale_read(nlohmann::json& doc, sqlite3* db) {
  if (!read_is_stale(db)) return;
  doc["stale"] = true;
  doc["warnings"].push_back(stale_read_warning(sqlite3_db_filename(db, "main")));
}

}  // namespace causeway
