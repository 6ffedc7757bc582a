#include "fleet/ship_table.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <memory>
#include <thread>
#include <unordered_set>

#include "diagnosis/rank_inference.h"
#include "fleet/fleet_query.h"
#include "fleet/native_block.h"
#include "fleet/tsv.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::fleet {

std::string SessionKey::tsv_prefix() const {
  std::string s;
  tsv_escape_append(s, host);
  s += '\t';
  tsv_escape_append(s, boot_id);
  s += '\t' + std::to_string(start) + '\t' + std::to_string(id) + '\t';
  return s;
}

std::string SessionKey::where() const {
  return "host = " + sql_quote(host) + " AND boot_id = " + sql_quote(boot_id) + " AND session_start = " + std::to_string(start) +
         " AND session_id = " + std::to_string(id);
}

namespace {

enum class ValueKind { Int, Float, Text };

struct ColumnShape {
  ValueKind kind;
  bool nullable;
};

std::vector<ColumnShape> shapes(const TableSpec& t) {
  std::vector<ColumnShape> out;
  for (const Column& c : t.columns) {
    ValueKind k = c.type.find("Int") != std::string::npos     ? ValueKind::Int
                  : c.type.find("Float") != std::string::npos ? ValueKind::Float
                                                              : ValueKind::Text;
    out.push_back({k, c.type.rfind("Nullable(", 0) == 0});
  }
  return out;
}

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

// One row as TabSeparated, typed by the ClickHouse column: the trace DB is SQLite (any value
// in any column), so an integer column always gets an integer, NULL only where it may.
void append_row(std::string& out, const Statement& st, const std::vector<ColumnShape>& shape) {
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += '\t';
    int col = static_cast<int>(i);
    if (st.col_null(col)) {
      if (shape[i].nullable) out += "\\N";
      else if (shape[i].kind != ValueKind::Text) out += '0';
      continue;
    }
    switch (shape[i].kind) {
      case ValueKind::Int: append_int(out, st.col_int(col)); break;
      case ValueKind::Float: {
        char buf[32];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, st.col_double(col));
        out.append(buf, end);
        break;
      }
      case ValueKind::Text: tsv_escape_append(out, st.col_blob(col)); break;
    }
  }
}

Result<void> commit_progress(ShipContext& c, const SessionKey& key, const std::string& table, int64_t upto,
                             const std::string& digest) {
  std::string row = key.tsv_prefix();
  tsv_escape_append(row, table);
  row += '\t' + std::to_string(upto) + '\t' + digest + '\t' + std::to_string(++c.ver) + '\n';
  return c.ch.insert_tsv("ship_progress", row);
}

// The last confirmed watermark or digest of a (session, table): no row (never shipped) or one.
// Two rows, or an upto that is not a rowid, is not an answer to this query: an error, never
// "nothing shipped yet" (that would send the session again).
Result<StoreRows> progress(ShipContext& c, const SessionKey& key, const std::string& table) {
  auto rows = c.ch.select("SELECT argMax(upto, ver), argMax(digest, ver) FROM " + c.ch.table("ship_progress") + " WHERE " +
                     key.where() + " AND tbl = " + sql_quote(table) + " HAVING count() > 0", {ColumnKind::Int, ColumnKind::Text}, kWatermarkAnswer);
  if (!rows) return rows.error();
  if (rows->size() > 1 || (!rows->empty() && to_i64(rows->front()[0]) < 0))
    return make_error("fleet_bad_answer", "the fleet store's watermark for " + table + " is not one row of a rowid (" +
                                              std::to_string(rows->size()) + " rows): not ClickHouse? nothing was sent");
  return rows;
}

Result<Statement> prepare(ShipContext& c, const TableSpec& t) {
  auto st = Statement::prepare(c.db, t.sqlite_select);
  if (!st) return make_error("db_read", "cannot read " + t.name + " from the trace DB: " + st.error().message);
  return st;
}

Error read_error(ShipContext& c, const TableSpec& t) {
  return make_error("db_read", "reading " + t.name + " from the trace DB failed: " + std::string(sqlite3_errmsg(c.db)));
}

// Snapshot tables: the digest of the rows as they would be sent; unchanged → nothing to do.
Result<int64_t> ship_snapshot(ShipContext& c, const SessionKey& key, const TableSpec& t) {
  const auto shape = shapes(t);
  // One read transaction: the digest and the rows sent are the same rows even while a live
  // writer adds to the DB.
  struct ReadTxn {
    sqlite3* db;
    ~ReadTxn() { sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr); }
  } txn{c.db};
  sqlite3_exec(c.db, "BEGIN", nullptr, nullptr, nullptr);
  auto st = prepare(c, t);
  if (!st) return st.error();
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr);
  st->bind(1, key.id);
  std::string row;
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    row.clear();
    append_row(row, *st, shape);
    row += '\n';
    EVP_DigestUpdate(md.get(), row.data(), row.size());
  }
  if (rc != SQLITE_DONE) return read_error(c, t);
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(md.get(), d, &n);
  std::string digest;
  for (unsigned i = 0; i < n; ++i) {
    char h[3];
    std::snprintf(h, sizeof h, "%02x", d[i]);
    digest += h;
  }
  auto p = progress(c, key, t.name);
  if (!p) return p.error();
  if (!p->empty() && p->front().size() == 2 && p->front()[1] == digest) return int64_t{0};

  // Changed (or never sent): every row again under one newer version; readers take the
  // newest per key (FINAL), and the progress row is written only after all of them.
  const uint64_t ver = ++c.ver;
  const std::string prefix = key.tsv_prefix(), suffix = '\t' + std::to_string(ver) + '\n';
  st->reset();
  st->bind(1, key.id);
  std::string batch;
  int64_t sent = 0;
  size_t in_batch = 0;
  while ((rc = st->step()) == SQLITE_ROW) {
    batch += prefix;
    append_row(batch, *st, shape);
    batch += suffix;
    ++sent;
    if (++in_batch == c.batch_rows) {
      if (auto r = c.ch.insert_tsv(t.name, batch); !r) return r.error();
      batch.clear();
      in_batch = 0;
    }
  }
  if (rc != SQLITE_DONE) return read_error(c, t);
  if (!batch.empty())
    if (auto r = c.ch.insert_tsv(t.name, batch); !r) return r.error();
  if (auto r = commit_progress(c, key, t.name, sent, digest); !r) return r.error();
  return sent;
}

// The source ids the store holds in [from, to]: rows of a batch whose progress row never
// arrived (the server died after the insert, the link broke, ship was killed). Asked one
// batch range at a time, so the answer is bounded by the batch size.
Result<std::unordered_set<int64_t>> held_ids(ShipContext& c, const SessionKey& key, const TableSpec& t, int64_t from, int64_t to) {
  // At most one id per row of the batch: 20 digits and a newline each, and the header.
  const AnswerLimit ids_limit{static_cast<size_t>(to - from + 1) * 21 + 4096, "a batch's stored ids"};
  auto rows = c.ch.select("SELECT src_id FROM " + c.ch.table(t.name) + " WHERE " + key.where() + " AND src_id BETWEEN " +
                          std::to_string(from) + " AND " + std::to_string(to), {ColumnKind::Int}, ids_limit);
  if (!rows) return rows.error();
  std::unordered_set<int64_t> ids;
  for (const auto& r : *rows)
    ids.insert(to_i64(r[0]));
  return ids;
}

// The block's columns: the host key, then the table's own.
std::vector<Column> block_columns(const TableSpec& t) {
  std::vector<Column> cols{{"host", "String"}, {"boot_id", "String"}, {"session_start", "Int64"}, {"session_id", "Int64"}};
  cols.insert(cols.end(), t.columns.begin(), t.columns.end());
  return cols;
}

// One trace-DB row into the block, typed by the ClickHouse column (the trace DB is SQLite:
// any value in any column), after the host key.
void add_row(NativeBlock& b, const SessionKey& key, const Statement& st) {
  b.add_string(0, key.host);
  b.add_string(1, key.boot_id);
  b.add_int(2, key.start);
  b.add_int(3, key.id);
  for (size_t i = 4; i < b.columns(); ++i) {
    const int col = static_cast<int>(i - 4);
    if (st.col_null(col)) b.add_null(i);
    else if (b.type(i) == NativeType::String) b.add_string(i, st.col_blob(col));
    else if (b.type(i) == NativeType::Float64) b.add_float(i, st.col_double(col));
    else b.add_int(i, st.col_int(col));
  }
  b.end_row();
}

// A batch as read: the last id read (-1: none) and the rows added to the block.
using Batch = std::optional<std::pair<int64_t, int64_t>>;  // nullopt: the read failed

// Reads the statement's rows up to check_to into the block, those `send` accepts.
template <class Send>
Batch read_rows(Statement& st, int64_t check_to, const Send& send, const SessionKey& key, NativeBlock& block) {
  int64_t last = -1, rows = 0;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    const int64_t id = st.col_int(0);
    if (id > check_to) break;
    last = id;
    if (!send(id)) continue;
    add_row(block, key, st);
    ++rows;
  }
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return std::nullopt;
  return std::pair{last, rows};
}

// The collectives table: the host's rank inference (diagnosis/rank_inference.h), batch by
// batch in id order, the way the correlator runs it chunk by chunk. How each rank was numbered
// (its job communicator and sequence shift) is read back from the rows already stored, so every
// ship numbers it the same way (a live trace ships every 10 s); a communicator this host has
// not numbered yet is aligned against the rows other hosts stored (docs/FLEET.md).
class CollectiveRanks {
 public:
  CollectiveRanks(ShipContext& c, const SessionKey& key) : c_(c), key_(key) {}
  Result<void> load(int64_t session_id) { return ranks_.load(c_.db, session_id); }
  bool has_ranks() const { return ranks_.has_ranks(); }

  // The numbering of the rows stored; false when they were stored by a causeway before schema
  // 3 (no traced handle: the numbering is rebuilt by reading the session's collectives again).
  Result<bool> restore() {
    const std::string launcher = " AND rank_source NOT IN ('', 'init')";
    auto streams = c_.ch.select("SELECT pid, handle, any(comm), any(seq - traced_seq), min(src_id) AS first FROM " +
                                c_.ch.table("collectives") + " WHERE " + key_.where() + launcher +
                                " GROUP BY pid, handle ORDER BY pid, first", {ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int, ColumnKind::Int}, kBookkeepingAnswer);
    if (!streams) return streams.error();
    for (const auto& r : *streams)
      if (r.size() >= 4 && to_i64(r[1]) == 0) return false;
    for (const auto& r : *streams)
      if (r.size() >= 4) ranks_.restore_stream(static_cast<uint32_t>(to_i64(r[0])), to_i64(r[1]), to_i64(r[2]), to_i64(r[3]));
    auto history = c_.ch.select("SELECT comm, seq, min(ts_ns + dur_ns) FROM " + c_.ch.table("collectives") + " WHERE " +
                                key_.where() + launcher + " GROUP BY comm, seq ORDER BY comm, seq DESC LIMIT 4096 BY comm", {ColumnKind::Int, ColumnKind::Int, ColumnKind::Int}, kNumberingAnswer);
    if (!history) return history.error();
    for (const auto& r : *history)
      if (r.size() >= 3) ranks_.restore_history(to_i64(r[0]), to_i64(r[1]), to_i64(r[2]));
    return true;
  }

  template <class Send>
  Result<std::pair<int64_t, int64_t>> read(Statement& st, int64_t check_to, const Send& send, NativeBlock& block) {
    ids_.clear(), durs_.clear(), entries_.clear(), traced_.clear();
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {  // id, ts_ns, dur_ns, pid, tid, op_id, a1, a4, a2, a3
      if (st.col_int(0) > check_to) break;
      ids_.push_back(st.col_int(0));
      durs_.push_back(st.col_int(2));
      traced_.push_back({st.col_int(6), st.col_int(7)});
      CollectiveEntry e{st.col_int(6), st.col_int(7), static_cast<uint32_t>(st.col_int(3)), static_cast<uint32_t>(st.col_int(4)),
                        static_cast<int32_t>(st.col_int(8)), static_cast<int32_t>(st.col_int(9)),
                        static_cast<uint16_t>(st.col_int(5)), st.col_int(1)};
      resolved_.push_back(ranks_.resolve(e, e.ts_ns + durs_.back()));
      entries_.push_back(e);
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return make_error("db_read", sqlite3_errmsg(c_.db));
    if (auto r = other_hosts_history(); !r) return r.error();
    ranks_.align(entries_);
    int64_t rows = 0;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (!send(ids_[i])) continue;
      const CollectiveEntry& e = entries_[i];
      block.add_string(0, key_.host), block.add_string(1, key_.boot_id), block.add_int(2, key_.start), block.add_int(3, key_.id);
      size_t col = 4;
      for (int64_t v : {ids_[i], e.ts_ns, durs_[i], int64_t{e.pid}, int64_t{e.tid}, int64_t{e.op}, e.comm, e.seq, int64_t{e.rank},
                        int64_t{e.nranks}})
        block.add_int(col++, v);
      block.add_string(col++, resolved_[i] ? ranks_.source(e.pid) : e.rank >= 0 ? "init" : "");
      block.add_int(col++, traced_[i].first);
      block.add_int(col, traced_[i].second);
      block.end_row();
      ++rows;
    }
    resolved_.clear();
    return std::pair{ids_.empty() ? int64_t{-1} : ids_.back(), rows};
  }

 private:
  // A job communicator this host has no numbering for yet: the return times other hosts stored
  // over this batch's calls on it (the earliest 4096), so this host's ranks join that numbering
  // rather than start one of their own (a tracer attached later counts from a later collective).
  // When nothing is stored, the host that holds the job's rank 0 starts the numbering; any other
  // waits a few seconds for it first, so hosts whose first ships run at the same moment (a live
  // trace started everywhere at once) still end up with one numbering.
  Result<void> other_hosts_history() {
    struct Span {
      int64_t first = INT64_MAX, last = INT64_MIN;  // return times of its calls in this batch
      bool rank0 = false;                           // this host holds the job's rank 0
    };
    std::map<int64_t, Span> spans;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (!resolved_[i] || ranks_.has_history(entries_[i].comm)) continue;
      const int64_t end = entries_[i].ts_ns + durs_[i];
      Span& sp = spans[entries_[i].comm];
      sp.first = std::min(sp.first, end), sp.last = std::max(sp.last, end), sp.rank0 |= entries_[i].rank == 0;
    }
    for (const auto& [comm, sp] : spans) {
      const std::string sql = "SELECT seq, min(ts_ns + dur_ns) FROM " + c_.ch.table("collectives") + " WHERE comm = " +
                              std::to_string(comm) + " AND NOT (" + key_.where() + ") AND ts_ns + dur_ns BETWEEN " +
                              std::to_string(sp.first - kMarginNs) + " AND " + std::to_string(sp.last + kMarginNs) +
                              " GROUP BY seq ORDER BY seq LIMIT 4096";
      const auto give_up = std::chrono::steady_clock::now() + kWaitForNumbering;
      while (true) {
        auto rows = c_.ch.select(sql, {ColumnKind::Int, ColumnKind::Int}, kBookkeepingAnswer);
        if (!rows) return rows.error();
        for (const auto& r : *rows)
          if (r.size() >= 2) ranks_.restore_history(comm, to_i64(r[0]), to_i64(r[1]));
        if (ranks_.has_history(comm) || sp.rank0 || std::chrono::steady_clock::now() >= give_up) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    }
    return {};
  }

  static constexpr int64_t kMarginNs = 1'000'000'000;  // around the batch's return times
  // How long a host without rank 0 waits for a stored numbering (rank 0's host ships its
  // collectives first, seconds after its ship starts: fleet/tables.cpp); once per communicator.
  static constexpr std::chrono::seconds kWaitForNumbering{5};
  ShipContext& c_;
  const SessionKey& key_;
  RankInference ranks_;
  std::vector<int64_t> ids_, durs_;
  std::vector<std::pair<int64_t, int64_t>> traced_;  // a1, a4 as traced
  std::vector<bool> resolved_;
  std::vector<CollectiveEntry> entries_;
};

// The block's columns that order a session's rows in the store (the table's sort key after
// the host key, which is the same on every row of a batch): a batch sent in that order is
// stored without the server sorting it (fleet/native_block.h).
Result<std::vector<size_t>> sort_columns(const TableSpec& t) {
  const std::vector<Column> cols = block_columns(t);
  std::vector<size_t> out;
  for (size_t start = 0; start < t.order_by.size();) {
    size_t end = t.order_by.find(',', start);
    if (end == std::string::npos) end = t.order_by.size();
    std::string name = t.order_by.substr(start, end - start);
    name.erase(0, name.find_first_not_of(' '));
    auto it = std::find_if(cols.begin(), cols.end(), [&](const Column& c) { return c.name == name && c.type == "Int64"; });
    if (it == cols.end()) return make_error("internal", "table " + t.name + ": sort key " + name + " is not an Int64 column");
    out.push_back(static_cast<size_t>(it - cols.begin()));
    start = end + 1;
  }
  return out;
}

// The highest id of table t the store holds above the watermark (the watermark when none):
// up to there, rows of a batch may be there already.
Result<int64_t> held_max_id(ShipContext& c, const SessionKey& key, const TableSpec& t, int64_t wm) {
  auto top = c.ch.select("SELECT max(src_id), count() FROM " + c.ch.table(t.name) + " WHERE " + key.where() +
                         " AND src_id > " + std::to_string(wm), {ColumnKind::Int, ColumnKind::Int}, kWatermarkAnswer);
  if (!top) return top.error();
  if (top->size() != 1)
    return make_error("fleet_bad_answer", "the fleet store answered " + std::to_string(top->size()) + " rows for the highest " +
                                              t.name + " id it holds, where an aggregate has one: not ClickHouse? nothing was sent");
  return to_i64(top->front()[1]) > 0 ? std::max(wm, to_i64(top->front()[0])) : wm;
}

// Collective rows resolve ranks with the numbering the stored rows were given (restore());
// only a store written before schema 3 has every row up to the watermark read again (pos = 0),
// resolved and not sent. True when there is no collective after the watermark (nothing to ship).
Result<bool> start_collectives(ShipContext& c, const SessionKey& key, const TableSpec& t, Statement& st,
                               const std::function<void()>& run, int64_t wm, int64_t& pos,
                               std::optional<CollectiveRanks>& ranks) {
  // The newest event first, then the scan: an event the scan cannot see is newer than it.
  auto top_event = query_int(c.db, "SELECT max(id) FROM events WHERE session_id = " + std::to_string(key.id));
  if (!top_event) return read_error(c, t);
  run();
  const int rc = st.step();
  if (rc == SQLITE_DONE) {
    // No collective after the watermark: it moves over the events scanned, so the next ship
    // (a re-ship, a live round) reads only newer events instead of the whole DB again.
    const int64_t upto = top_event->value_or(0);
    if (upto > wm)
      if (auto r = commit_progress(c, key, t.name, upto, ""); !r) return r.error();
    return true;
  }
  if (rc != SQLITE_ROW) return read_error(c, t);
  if (auto r = ranks.emplace(c, key).load(key.id); !r) return r.error();
  if (ranks->has_ranks()) {  // else nothing is resolved: no numbering to keep
    auto restored = ranks->restore();
    if (!restored) return restored.error();
    if (!*restored) pos = 0;  // stored before schema 3: rebuilt from the session's first collective
  }
  return false;
}

// Up to held_max the store may hold some of the batch's rows (a batch stored whose progress row
// never arrived): the batch's ids are read first and the store asked which of them it holds;
// `held` gets those and `check_to` the batch's last id.
Result<void> held_in_batch(ShipContext& c, const SessionKey& key, const TableSpec& t, Statement& st,
                           const std::function<void()>& run, int64_t wm, int64_t held_max,
                           std::optional<std::unordered_set<int64_t>>& held, int64_t& check_to) {
  run();
  int64_t first = -1, last = -1;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    if (st.col_int(0) <= wm) continue;  // replayed, never sent
    if (first < 0) first = st.col_int(0);
    last = st.col_int(0);
  }
  if (rc != SQLITE_DONE) return read_error(c, t);
  if (first >= 0 && first <= held_max) {
    auto h = held_ids(c, key, t, first, last);
    if (!h) return h.error();
    held = std::move(*h);
    check_to = last;  // rows past it (the DB changed between the reads) go in the next batch
  }
  return {};
}

Result<int64_t> ship_append(ShipContext& c, const SessionKey& key, const TableSpec& t) {
  auto made = NativeBlock::for_columns(block_columns(t));
  if (!made) return made.error();
  // Two blocks take turns: one is read and encoded while the other is in flight, and each
  // keeps its memory from batch to batch (no fresh pages to fault in per batch).
  NativeBlock blocks[2] = {*made, *made};
  int turn = 0;
  const auto sort_key = sort_columns(t);
  if (!sort_key) return sort_key.error();
  auto p = progress(c, key, t.name);
  if (!p) return p.error();
  int64_t wm = p->empty() ? 0 : to_i64(p->front()[0]);
  auto held_top = held_max_id(c, key, t, wm);
  if (!held_top) return held_top.error();
  const int64_t held_max = *held_top;

  auto st = prepare(c, t);
  if (!st) return st.error();
  int64_t pos = wm;  // where the next read starts: the watermark, or 0 while replaying
  auto run = [&] {
    st->reset();
    st->bind(1, key.id);
    st->bind(2, pos);
    st->bind(3, static_cast<int64_t>(c.batch_rows));
  };
  // Collective rows resolve ranks with the numbering the stored rows were given (restore());
  // only a store written before schema 3 has every row up to the watermark read again,
  // resolved and not sent.
  std::optional<CollectiveRanks> ranks;
  if (t.rows == RowKind::Collective) {
    auto done = start_collectives(c, key, t, *st, run, wm, pos, ranks);
    if (!done) return done.error();
    if (*done) return int64_t{0};
  }
  int64_t sent = 0;
  // One block is inserted (on the sender connection) while the next is read and encoded: the
  // trace DB and ClickHouse work at the same time. Its progress row is written only once the
  // insert has returned, so a confirmed id is always a stored one.
  struct InFlight {
    std::future<Result<void>> insert;
    int64_t last = 0, rows = 0;
  };
  std::optional<InFlight> in_flight;
  auto confirm = [&]() -> Result<void> {
    if (!in_flight) return {};
    InFlight f = std::move(*in_flight);
    in_flight.reset();
    if (f.insert.valid())
      if (auto r = f.insert.get(); !r) return r.error();
    if (auto r = commit_progress(c, key, t.name, f.last, ""); !r) return r.error();
    sent += f.rows;
    return {};
  };
  while (true) {
    // Up to held_max the store may hold some of the batch's rows (a batch stored whose progress
    // row never arrived): find the batch's ids first, ask which of them the store holds, and
    // encode only the others. Past held_max (every batch of a normal ship) one read does.
    std::optional<std::unordered_set<int64_t>> held;
    int64_t check_to = INT64_MAX;
    if (wm < held_max)
      if (auto r = held_in_batch(c, key, t, *st, run, wm, held_max, held, check_to); !r) return r.error();
    run();
    NativeBlock& block = blocks[turn];
    block.clear();
    const auto send = [&](int64_t id) { return id > wm && !(held && held->count(id)); };
    Batch got;
    if (ranks) {
      auto r = ranks->read(*st, check_to, send, block);
      if (!r && r.error().code != "db_read") return r.error();
      if (r) got = *r;
    } else {
      got = read_rows(*st, check_to, send, key, block);
    }
    if (!got) return read_error(c, t);
    const auto [last, rows] = *got;
    if (last < 0) break;  // nothing after pos
    pos = last;
    if (last <= wm) continue;  // replayed only
    if (auto r = confirm(); !r) return r.error();
    InFlight next{{}, last, rows};
    if (rows > 0) {
      block.sort_by(*sort_key);
      turn ^= 1;
      next.insert = std::async(std::launch::async, [&sender = c.sender, &table = t.name, pieces = block.wire()] {
        return sender.insert_native(table, pieces);
      });
    }
    in_flight = std::move(next);
    wm = last;
  }
  if (auto r = confirm(); !r) return r.error();
  return sent;
}

}  // namespace

Result<int64_t> ship_table(ShipContext& c, const SessionKey& key, const TableSpec& spec) {
  return spec.kind == TableKind::Append ? ship_append(c, key, spec) : ship_snapshot(c, key, spec);
}

}  // namespace causeway::fleet
