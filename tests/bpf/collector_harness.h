// Helpers for the collector's bpf tests: run `causeway trace` in the background until a
// signal, run cw_workload, and read numbers back from the trace DB.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace causeway::test {

// collector_harness.cpp also defines missing_requirement() (tests/support/test_support.h) for
// every bpf test: root, kernel BTF, and `causeway check` loading the programs; else exit 77.

std::string testprog(const std::string& name);  // <build>/testprogs/<name>

class Tracer {
 public:
  // Starts `causeway trace --db <dir>/trace.db --quiet --ready-file … args…` and waits until
  // its probes are attached.
  Tracer(const TempDir& dir, const std::vector<std::string>& args);
  // The same, as <dir>/<name>.db (.ready, .log); with uts_host, in a new UTS namespace with
  // that hostname (`unshare --uts`): a second "host" beside the first.
  Tracer(const TempDir& dir, const std::vector<std::string>& args, const std::string& name, const std::string& uts_host);
  ~Tracer();
  // Sends sig and waits; returns the exit code (-1 when killed by a signal).
  int stop(int sig = 2);
  const std::string& db() const { return db_; }
  std::string log() const;
  pid_t pid() const { return pid_; }  // -1 once stopped

 private:
  pid_t pid_ = -1;
  std::string db_, ready_, log_;
};

// Starts cw_workload in the background (stdout/stderr to a log file); returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log);
int wait_exit(pid_t pid);
// A spawned process killed (SIGKILL) and reaped when the scope ends before wait() reaped it:
// a workload left waiting on its --wait-file when a REQUIRE stops the test early.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  int wait();  // wait_exit, once
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
  bool reaped_ = false;
};
// The live call count of a cw_workload started with --count-file PATH (created before its
// --ready-file), read while it runs.
class CallCounter {
 public:
  explicit CallCounter(const std::string& path);
  ~CallCounter();
  CallCounter(const CallCounter&) = delete;
  CallCounter& operator=(const CallCounter&) = delete;
  uint64_t read() const;

 private:
  const uint64_t* count_ = nullptr;
};
void wait_for_file(const std::string& path, int timeout_ms = 20000);
void touch(const std::string& path);  // creates an empty file (a --wait-file's go signal)
void sleep_ms(int ms);

int64_t q_int(const std::string& db, const std::string& sql);
// SQL: the event is a call of a probed library (CUDA runtime, driver, NCCL), from the trace DB's
// `ops` rows, which the op table (tracedb/op_catalog.h) writes.
inline const std::string kLibraryCall = "op_id IN (SELECT id FROM ops WHERE source IN ('cuda', 'driver', 'nccl'))";
std::vector<std::vector<int64_t>> q_rows(const std::string& db, const std::string& sql);
std::string q_text(const std::string& db, const std::string& sql);

}  // namespace causeway::test
