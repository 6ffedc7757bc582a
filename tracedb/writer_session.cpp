// The writer's session tables: sessions (one row per trace, import or demo) and ops (the op
// catalog each session's events name), with their columns listed once and bound by name
// (tracedb/table_columns.h).
#include "tracedb/op_catalog.h"
#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"
#include "tracedb/table_columns.h"

#ifndef CAUSEWAY_VERSION
#define CAUSEWAY_VERSION "0.0.0"
#endif

namespace causeway {
namespace writer_session {

enum class SessionCol {
  source_kind, label, host, kernel, gpus, driver_version, cuda_version, tool_version, started_ns, system, boot_id,
  clock_offset_ns, count_
};
inline constexpr TableColumns<SessionCol> kSessionColumns{
    "sessions",
    {"source_kind", "label", "host", "kernel", "gpus", "driver_version", "cuda_version", "tool_version", "started_ns",
     "system", "boot_id", "clock_offset_ns"}};

// family last: an imported op (ensure_op) is written without it (the columns before family).
enum class OpCol { id, source, name, kind, arg_names, family, count_ };
inline constexpr TableColumns<OpCol> kOpColumns{"ops", {"id", "source", "name", "kind", "arg_names", "family"}};
// The catalog as this binary knows it: a DB made by an older one gains the newer fields and
// layouts (an arg a newer binary decodes reads 0 in an older session's rows).
constexpr const char* kOpOnConflict = " ON CONFLICT DO UPDATE SET family = excluded.family, arg_names = excluded.arg_names";

std::string_view op_kind(bool is_call) { return is_call ? "call" : "event"; }

}  // namespace writer_session

Result<void> StoreWriter::prepare_session_statements(sqlite3* h) {
  using namespace store_writer_detail;
  if (auto r = prepare_into(h, upd_rolled_, "UPDATE sessions SET rolled_up_to_ns = ? WHERE id = ?"); !r) return r;
  return prepare_into(h, upd_stopped_, "UPDATE sessions SET stopped_ns = ? WHERE id = ?");
}

Result<int64_t> StoreWriter::begin_session(const SessionInfo& info) {
  using namespace writer_session;
  std::lock_guard db_lock(db_mu_);
  sqlite3* h = db_.get();
  if (auto r = exec_sql(h, "BEGIN IMMEDIATE"); !r) return r.error();
  auto ins = Statement::prepare(h, kSessionColumns.insert_sql());
  if (!ins) return ins.error();
  using S = SessionCol;
  RowBind<S>(*ins)
      .set(S::source_kind, info.source_kind)
      .set(S::label, info.label)
      .set(S::host, info.host)
      .set(S::kernel, info.kernel)
      .set(S::gpus, info.gpus)
      .set(S::driver_version, info.driver_version)
      .set(S::cuda_version, info.cuda_version)
      .set(S::tool_version, std::string_view(CAUSEWAY_VERSION))
      .set(S::started_ns, info.started_ns)
      .set_nonempty(S::system, info.system)
      .set_nonempty(S::boot_id, info.boot_id)
      .set_opt(S::clock_offset_ns, info.clock_offset_ns);
  if (ins->step() != SQLITE_DONE) {
    std::string e = sqlite_error_text(h);
    (void)exec_sql(h, "ROLLBACK");
    return make_error("db_write", "cannot start a session in " + path_ + ": " + e);
  }
  session_id_ = sqlite3_last_insert_rowid(h);
  auto op = Statement::prepare(h, kOpColumns.insert_sql() + kOpOnConflict);
  if (!op) return op.error();
  for (const OpInfo& o : op_catalog()) {
    RowBind<OpCol>(*op)
        .set(OpCol::id, int64_t{o.id})
        .set(OpCol::source, source_name(o.source))
        .set(OpCol::name, o.name)
        .set(OpCol::kind, op_kind(o.is_call))
        .set(OpCol::arg_names, o.arg_names)
        .set(OpCol::family, family_name(o.family));
    op->step();
    op->reset();
  }
  if (auto r = exec_sql(h, "COMMIT"); !r) return r.error();
  rolled_up_to_ns_ = info.started_ns;
  thread_ = std::thread([this] { run(); });
  return session_id_;
}

Result<uint16_t> StoreWriter::ensure_op(const std::string& source, const std::string& name, bool is_call,
                                        const std::string& arg_names) {
  using namespace writer_session;
  std::lock_guard db_lock(db_mu_);
  sqlite3* h = db_.get();
  auto find = Statement::prepare(h, "SELECT id FROM ops WHERE source = ? AND name = ?");
  if (!find) return find.error();
  find->bind(1, source);
  find->bind(2, name);
  if (find->step() == SQLITE_ROW) {
    auto id = static_cast<uint16_t>(find->col_int(0));
    known_ops_[id] = 1;
    return id;
  }
  // Imported ops take ids from 10000 up, clear of the fixed catalog.
  auto next = query_int(h, "SELECT max(10000, coalesce(max(id) + 1, 10000)) FROM ops");
  if (!next) return next.error();
  int64_t id = next->value_or(10000);
  if (id > 65535) return make_error("db_write", "too many distinct ops (more than 55,535 imported names)");
  auto ins = Statement::prepare(h, kOpColumns.insert_sql("INSERT", OpCol::family));
  if (!ins) return ins.error();
  RowBind<OpCol>(*ins)
      .set(OpCol::id, id)
      .set(OpCol::source, source)
      .set(OpCol::name, name)
      .set(OpCol::kind, op_kind(is_call))
      .set(OpCol::arg_names, arg_names);
  if (ins->step() != SQLITE_DONE) return make_error("db_write", "cannot add op " + name + ": " + sqlite_error_text(h));
  known_ops_[id] = 1;
  return static_cast<uint16_t>(id);
}

}  // namespace causeway
