// What `ship` sends: one spec per fleet-store table, saying where its rows come from in the
// trace DB and how ClickHouse keeps them. Every table starts with the host key
// (host, boot_id, session_start, session_id): a session is named by the host it ran on, that
// host's boot and its start, never by merge's shifted pids (docs/FLEET.md "A fleet").
#pragma once

#include <string>
#include <vector>

namespace causeway::fleet {

// How a table is kept exactly once (docs/FLEET.md "Exactly once").
enum class TableKind {
  Append,    // rows only ever added (events, sched, requests, engine_metrics): a watermark on
             // the trace DB's rowid, committed after each batch, and a check for rows of an
             // unconfirmed batch before resuming
  Snapshot,  // small tables whose rows change (collector counters, chains): re-sent whole when
             // their digest changed, with a newer version the replace-by-key engine keeps
};

// How a row of the trace DB becomes a row of the store.
enum class RowKind {
  Plain,       // column for column
  Collective,  // an NCCL collective entry: a rank whose ncclCommInitRank was not traced gets its
               // launcher rank and the job communicator (diagnosis/rank_inference.h), as the
               // host's correlator does, so the store matches it across hosts too
};

struct Column {
  std::string name;
  std::string type;  // ClickHouse type
};

struct TableSpec {
  std::string name;
  TableKind kind;
  // Append: SELECT rowid, cols… WHERE session_id = ?1 AND rowid > ?2 ORDER BY rowid LIMIT ?3.
  // Snapshot: SELECT cols… for session ?1. Columns in the order of `columns`.
  std::string sqlite_select;
  std::vector<Column> columns;  // after the host key; append tables start with src_id (the rowid)
  std::string order_by;         // after the host key: the replace key, so it identifies a row
  std::string time_column;      // append tables: partitioned by the UTC day of this (ns; an expression); "" none
  RowKind rows = RowKind::Plain;
};

// The host key, first in every table.
inline constexpr const char* kHostKeyColumns = "host String, boot_id String, session_start Int64, session_id Int64";
inline constexpr const char* kHostKeyNames = "host, boot_id, session_start, session_id";

const std::vector<TableSpec>& table_specs();

}  // namespace causeway::fleet
