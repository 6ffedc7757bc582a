// Read access to a trace file of ingero (the Go eBPF GPU tracer): its SQLite layout
// (events, sources, ops, stack_traces, process_names, sessions, causal_chains). The file is
// foreign and may sit in a read-only folder: it is opened read-only, falling back to
// immutable=1, and checked to really be ingero's layout before anything is read or written.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "common/result.h"
#include "tracedb/sqlite_handle.h"

namespace causeway {

// Which optional columns this file's version has (columns were added over ingero versions).
struct IngeroLayout {
  std::set<std::string> event_columns;
  std::set<std::string> session_columns;
  bool has_stacks = false;
  bool has_process_names = false;
  bool has_sessions = false;
  bool has(const std::string& column) const { return event_columns.count(column) > 0; }
};

class IngeroSource {
 public:
  // Fails with "import_missing" (no such file), "import_foreign" (not SQLite, a causeway DB,
  // or not ingero's layout; the message names what is missing) or "import_open".
  static Result<IngeroSource> open(const std::string& path);

  sqlite3* db() const { return db_.get(); }
  const IngeroLayout& layout() const { return layout_; }
  // (source id, op id) -> op name, and source id -> source name, from the file's own tables.
  const std::map<std::pair<int64_t, int64_t>, std::string>& op_names() const { return op_names_; }
  const std::map<int64_t, std::string>& source_names() const { return source_names_; }

 private:
  IngeroSource(DbHandle db, IngeroLayout layout) : db_(std::move(db)), layout_(std::move(layout)) {}
  DbHandle db_;
  IngeroLayout layout_;
  std::map<std::pair<int64_t, int64_t>, std::string> op_names_;
  std::map<int64_t, std::string> source_names_;
};

}  // namespace causeway
