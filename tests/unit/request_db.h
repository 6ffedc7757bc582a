// A trace DB of requests and engine rows written by the real writer to a real SQLite file,
// asked through request_latency_json (the request-cause tests).
#pragma once

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "diagnosis/request_chains.h"
#include "diagnosis/request_latency.h"
#include "tracedb/sqlite_handle.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

namespace causeway::requests {

inline constexpr int64_t kT0 = 1'700'000'000'000'000'000;
inline constexpr int64_t kMs = 1'000'000;

// One live session from kT0 to kT0 + 10 s holding what `fill` pushes.
struct Db {
  test::TempDir dir;
  std::string path = dir.file("t.db");
  template <typename F>
  explicit Db(F fill) {
    auto w = StoreWriter::open(path);
    REQUIRE(w);
    SessionInfo info;
    info.source_kind = "live";
    info.started_ns = kT0;
    REQUIRE((*w)->begin_session(info));
    fill(**w);
    REQUIRE((*w)->close(kT0 + 10'000 * kMs));
  }
  nlohmann::json ask(Metric m, double q) {
    auto h = open_read_only(path);
    REQUIRE(h);
    RequestQuery rq;
    rq.metric = m;
    rq.quantile = q;
    auto r = request_latency_json(h->get(), rq);
    REQUIRE(r);
    return *r;
  }
};

// The latest session's request chains as their stored documents, most severe first.
inline nlohmann::json request_chain_docs(sqlite3* db) {
  auto st = Statement::prepare(db, "SELECT max(id) FROM sessions");
  REQUIRE(st);
  REQUIRE(st->step() == SQLITE_ROW);
  auto records = request_chain_records(db, st->col_int(0));
  REQUIRE(records);
  nlohmann::json docs = nlohmann::json::array();
  for (const ChainRecord& r : *records) docs.push_back(nlohmann::json::parse(r.doc));
  return docs;
}

inline const nlohmann::json* cause(const nlohmann::json& tail, const std::string& name) {
  for (const auto& c : tail["causes"])
    if (c["cause"] == name) return &c;
  return nullptr;
}

}  // namespace causeway::requests
