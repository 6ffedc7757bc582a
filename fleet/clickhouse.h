// A ClickHouse HTTP client for the fleet store (cpp-httplib underneath, seen by no other file).
// Statements go in the POST body, rows to insert (Native columns, or TabSeparated for the small
// snapshot tables) with the INSERT in the URL;
// credentials go in the X-ClickHouse-User / X-ClickHouse-Key headers, which ClickHouse 18.16
// (Debian's) already accepts. No settings are ever sent with a query: a reader's profile may
// be readonly=1, where ClickHouse refuses any (docs/FLEET.md).
//
// The store is not trusted (docs/SECURITY.md "A hostile fleet store"): every answer is read
// as it streams in against a byte limit the caller chose, every call has one deadline for the
// whole exchange (not per read), and a SELECT's answer is checked for the shape asked
// (fleet/store_answer.h) before a row of it is returned.
#pragma once

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "fleet/endpoint.h"
#include "fleet/store_answer.h"

namespace causeway::fleet {

// The most one answer may hold, and what it was for (named in the error past it).
struct AnswerLimit {
  size_t max_bytes;
  const char* purpose;  // "a watermark read"
};

// Answers `ship` reads, sized from what it asks (a batch's ids are batch_rows numbers: asked
// with their own limit in ship_table.cpp).
inline constexpr AnswerLimit kStatementAnswer{64 << 10, "a statement (DDL or INSERT: ClickHouse answers nothing)"};
inline constexpr AnswerLimit kWatermarkAnswer{64 << 10, "a watermark read"};
inline constexpr AnswerLimit kBookkeepingAnswer{4 << 20, "a lookup of the store's layout or numbering"};
inline constexpr AnswerLimit kNumberingAnswer{64 << 20, "the return times of a session's stored collectives"};

// Stops every call of the clients that share it: `trace --ship` ends its rounds with it when the
// trace stops, and bounds the last round by the time left (fleet/live_ship.h).
struct CallStop {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> until_ns{INT64_MAX};  // steady_clock: no call runs past it
  std::string reason;                        // set before either: named in the error
};

class ClickHouse {
 public:
  explicit ClickHouse(Endpoint e, std::shared_ptr<const CallStop> stop = nullptr);
  ~ClickHouse();
  ClickHouse(const ClickHouse&) = delete;
  ClickHouse& operator=(const ClickHouse&) = delete;

  // Runs one statement that returns no rows (DDL, INSERT … VALUES). Errors:
  // "fleet_unreachable" (no connection, or it broke: the server died, the network was cut),
  // "fleet_auth" (wrong user or password), "fleet_refused" (ClickHouse answered with an error:
  // its message), "fleet_timeout" (past the call's deadline), "fleet_answer_too_large",
  // "fleet_bad_answer" (a 200 with a body where none belongs).
  Result<void> execute(const std::string& sql);

  // A SELECT of the caller's with the store's database as the current one, so a reader's own
  // SQL (run_sql) names tables unqualified; its body as it came, within the reader's limit.
  // `database` is a URL parameter, not a setting: readonly=1 allows it.
  Result<std::string> query_in_database(const std::string& sql);

  // INSERT INTO <table> FORMAT TabSeparated with `tsv` as the rows.
  Result<void> insert_tsv(const std::string& table, const std::string& tsv);

  // INSERT INTO <table> FORMAT Native with the pieces of a block (fleet/native_block.h) as
  // the body, streamed from where they are (a batch is tens of MB: no copy of it is made).
  Result<void> insert_native(const std::string& table, const std::vector<std::string_view>& pieces);

  // A SELECT read as TabSeparatedWithNamesAndTypes and checked to be `kinds.size()` columns
  // of those kinds (fleet/store_answer.h); rows of unescaped fields. `limit`: the most the
  // answer may hold (default: the endpoint's --max-answer, for a reader's query).
  Result<StoreRows> select(const std::string& sql, const std::vector<ColumnKind>& kinds);
  Result<StoreRows> select(const std::string& sql, const std::vector<ColumnKind>& kinds, const AnswerLimit& limit);

  const Endpoint& endpoint() const { return e_; }
  std::string table(const std::string& name) const { return e_.database + "." + name; }

 private:
  struct Call;
  Result<std::string> post(const Call& call);
  struct Impl;
  Endpoint e_;
  std::shared_ptr<const CallStop> stop_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace causeway::fleet
