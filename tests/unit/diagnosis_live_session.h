// A hand-built session with the shape the live collector writes (calls, sched switches,
// wakeups through the StoreWriter), diagnosed in one pass: the unit tests' stand-in for a
// planted live incident.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "diagnosis/correlator.h"
#include "tracedb/open.h"
#include "tracedb/store_writer.h"

namespace causeway::test {

// A session written through the store writer with the shape the live collector produces.
struct Live {
  std::unique_ptr<StoreWriter> w;
  int64_t t0 = 1'790'000'100'000'000'000;
  int64_t last = t0;  // the latest end of anything pushed: the session ends 1 ms after it
  explicit Live(const std::string& path) {
    auto r = StoreWriter::open(path);
    REQUIRE(r.ok());
    w = std::move(*r);
    SessionInfo si;
    si.source_kind = "live";
    si.started_ns = t0;
    REQUIRE(w->begin_session(si).ok());
  }
  void proc(uint32_t pid, const std::string& comm, uint32_t ppid = 1) {
    ProcessRecord p;
    p.pid = pid;
    p.ppid = ppid;
    p.comm = comm;
    w->push_meta(p);
    w->push_meta(ThreadRecord{pid, pid, comm});
  }
  void call(uint32_t pid, uint32_t tid, uint16_t op, int64_t ts, int64_t dur, std::array<int64_t, 6> a = {}) {
    CallRecord r;
    r.ts_ns = ts;
    r.dur_ns = dur;
    r.pid = pid;
    r.tid = tid;
    r.op = op;
    r.cpu = 0;
    r.a = a;
    last = std::max(last, ts + dur);
    w->push_wait(r);
  }
  void sw(int64_t ts, uint32_t prev, uint32_t prev_pid, int64_t state, uint32_t next, uint32_t next_pid) {
    last = std::max(last, ts);
    w->push_wait(SwitchRecord{ts, 0, prev, prev_pid, 120, state, next, next_pid, 120});
  }
  void wake(int64_t ts, uint32_t tid, uint32_t pid, uint32_t waker, uint32_t waker_pid) {
    last = std::max(last, ts);
    w->push_wait(WakeupRecord{ts, tid, pid, waker, waker_pid, 0});
  }
  // Like a live trace stopped when the workload is done: severities are shares of this window.
  std::vector<ChainRecord> finish(const std::string& path) {
    REQUIRE(w->close(last + 1'000'000).ok());
    auto db = open_read_only(path);
    REQUIRE(db.ok());
    auto c = diagnose_session(db->get(), 1);
    REQUIRE(c.ok());
    return std::move(*c);
  }
};


}  // namespace causeway::test
