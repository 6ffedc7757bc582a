#include "collector/selftest.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "bpf/events.h"
#include "collector/clock.h"
#include "collector/probe_table.h"
#include "collector/proc_info.h"
#include "collector/selftest_target.h"
#include "collector/session.h"
#include "tracedb/op_args.h"
#include "tracedb/op_catalog.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::collector {
namespace {

constexpr int kCalls = 2000;
constexpr uint64_t kSpinNs = 20'000;
constexpr uint64_t kStreamMagic = 0x5e1f;

// Runs in the forked child: no allocation (the parent has threads), only syscalls.
[[noreturn]] void child_workload(const char* scratch) {
  for (int i = 0; i < kCalls; ++i) {
    causeway_selftest_call(kStreamMagic, kSpinNs);
    if (i % 100 == 99) {
      timespec ts{0, 1'000'000};
      nanosleep(&ts, nullptr);  // voluntary sleeps: sched_switch with prev_state S
    }
  }
  int fd = ::open(scratch, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    static char block[64 * 1024];
    for (int i = 0; i < 4; ++i) {
      if (::write(fd, block, sizeof(block)) < 0) break;
      ::fsync(fd);
    }
    ::close(fd);
    ::unlink(scratch);
  }
  _exit(0);
}

int64_t one_int(sqlite3* db, const std::string& sql) {
  auto r = query_int(db, sql);
  return r && r->has_value() ? **r : -1;
}

// The traced workload: a child forked once the probe is attached, traced until it exited.
struct SelftestRun {
  TraceSummary sum;
  pid_t child = -1;
};
Result<SelftestRun> trace_selftest_child(const std::string& db_path, const CodeLocation& loc) {
  const std::string scratch =
      (std::filesystem::path(db_path).parent_path() / (".causeway-selftest-" + std::to_string(::getpid()))).string();
  pid_t child = -1;
  int64_t child_exit_mono = 0;
  TraceOptions o;
  o.db = db_path;
  o.label = "selftest";
  o.verbose = false;
  o.rescan_interval_ns = 60'000'000'000;  // nothing to discover: the probe is explicit
  ExtraProbe probe;
  probe.binary = loc.binary;
  probe.offset = loc.offset;
  // causeway_selftest_call(stream, spin) stands in for cudaStreamSynchronize(stream).
  probe.cookie = make_cookie(*find_op(CW_OP_CUDA_STREAM_SYNC));
  o.extra_probes.push_back(probe);
  o.duration_ns = 60'000'000'000;
  o.on_ready = [&] {
    child = ::fork();
    if (child == 0) child_workload(scratch.c_str());
  };
  auto stop = [&] {
    if (child <= 0) return false;
    if (child_exit_mono == 0) {
      int st = 0;
      if (::waitpid(child, &st, WNOHANG) == child) child_exit_mono = monotonic_ns();
      return false;
    }
    return monotonic_ns() - child_exit_mono > 300'000'000;  // let the exit and last events land
  };
  auto sum = run_trace(o, stop);
  if (child > 0 && child_exit_mono == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
  if (!sum) return sum.error();
  return SelftestRun{std::move(*sum), child};
}

// What the DB holds of the run, against what the child did.
Result<SelftestReport> selftest_report(const std::string& db_path, const SelftestRun& run, int64_t t0) {
  const TraceSummary* sum = &run.sum;
  const pid_t child = run.child;
  auto db = open_read_only(db_path);
  if (!db) return db.error();
  const std::string where = " WHERE session_id = " + std::to_string(sum->session_id);
  const std::string pid = std::to_string(child);
  const int64_t calls = one_int(db->get(), "SELECT count(*) FROM events" + where + " AND pid = " + pid +
                                               " AND op_id = " + std::to_string(CW_OP_CUDA_STREAM_SYNC));
  const int64_t min_dur = one_int(db->get(), "SELECT min(dur_ns) FROM events" + where + " AND pid = " + pid +
                                                 " AND op_id = " + std::to_string(CW_OP_CUDA_STREAM_SYNC));
  const int64_t streams_ok = one_int(db->get(), "SELECT count(*) FROM events" + where + " AND pid = " + pid +
                                                    " AND " + CW_ARG_COLUMN("stream", arg_layout::stream) + " = " + std::to_string(kStreamMagic));
  const int64_t sleeps = one_int(db->get(), "SELECT count(*) FROM sched" + where + " AND prev_pid = " + pid +
                                                " AND prev_state != 0");
  const int64_t stacks = one_int(db->get(), "SELECT count(DISTINCT stack_id) FROM events" + where + " AND pid = " + pid +
                                                " AND stack_id IS NOT NULL AND stack_id != 0");
  const int64_t exit_code = one_int(db->get(), "SELECT exit_code FROM processes" + where + " AND pid = " + pid);
  const int64_t realtime_ok = one_int(db->get(), "SELECT count(*) FROM events" + where + " AND pid = " + pid +
                                                     " AND op_id = " + std::to_string(CW_OP_CUDA_STREAM_SYNC) +
                                                     " AND ts_ns > 1600000000000000000");

  nlohmann::json checks = nlohmann::json::array();
  bool ok = true;
  auto add = [&](const std::string& name, bool good, const std::string& detail) {
    checks.push_back({{"name", name}, {"ok", good}, {"detail", detail}});
    ok = ok && good;
  };
  add("calls", calls == kCalls, std::to_string(calls) + " of " + std::to_string(kCalls) + " probed calls recorded");
  add("durations", min_dur >= static_cast<int64_t>(kSpinNs), "shortest call " + std::to_string(min_dur) + " ns (busy-wait " +
                                                                 std::to_string(kSpinNs) + " ns)");
  add("args", streams_ok == kCalls, std::to_string(streams_ok) + " calls with the stream argument decoded");
  add("timestamps", realtime_ok == calls, "timestamps are Unix ns");
  add("sched", sleeps >= kCalls / 100, std::to_string(sleeps) + " voluntary context switches of the workload");
  add("process_exit", exit_code == 0, "exit code recorded: " + std::to_string(exit_code));
  add("stacks", stacks >= 1, std::to_string(stacks) + " distinct user stacks");
  add("no_drops", sum->dropped_ring == 0 && sum->dropped_writer == 0,
      "dropped ring " + std::to_string(sum->dropped_ring) + ", writer " + std::to_string(sum->dropped_writer));

  SelftestReport rep;
  rep.ok = ok;
  int passed = 0;
  for (const auto& c : checks) passed += c["ok"].get<bool>();
  rep.summary = std::string(ok ? "PASS" : "FAIL") + ": " + std::to_string(passed) + "/" + std::to_string(checks.size()) +
                " checks; " + std::to_string(calls) + " calls traced through uprobes in " +
                std::to_string((monotonic_ns() - t0) / 1'000'000) + " ms";
  rep.doc = {{"ok", ok},
             {"summary", rep.summary},
             {"host", host_name()},
             {"kernel", kernel_release()},
             {"session_id", sum->session_id},
             {"checks", checks},
             {"numbers",
              {{"calls", calls},
               {"switches", sum->switches},
               {"wakeups", sum->wakeups},
               {"host_events", sum->host_events},
               {"dropped_ring", sum->dropped_ring},
               {"dropped_writer", sum->dropped_writer}}}};
  db->reset();

  return rep;
}

// The report, kept in the DB's test_reports.
Result<void> store_selftest_report(const std::string& db_path, const SelftestReport& rep) {
  auto w = open_for_write(db_path);
  if (!w) return w.error();
  {
    auto ins = Statement::prepare(w->get(), "INSERT INTO test_reports (ts_ns, host, ok, summary, doc) VALUES (?,?,?,?,?)");
    if (!ins) return ins.error();
    ins->bind(1, realtime_ns());
    ins->bind(2, host_name());
    ins->bind(3, int64_t{rep.ok ? 1 : 0});
    ins->bind(4, rep.summary);
    ins->bind(5, rep.doc.dump());
    if (ins->step() != SQLITE_DONE)
      return make_error("db_write", "storing the report failed: " + sqlite_error_text(w->get()));
  }
  close_writer_cleanly(*w);
  return {};
}

}  // namespace

Result<SelftestReport> run_selftest(const std::string& db_path) {
  auto loc = selftest_call_location();
  if (!loc) return loc.error();
  const int64_t t0 = monotonic_ns();
  auto run = trace_selftest_child(db_path, *loc);
  if (!run) return run.error();
  auto rep = selftest_report(db_path, *run, t0);
  if (!rep) return rep.error();
  if (auto stored = store_selftest_report(db_path, *rep); !stored) return stored.error();
  return rep;
}

}  // namespace causeway::collector
