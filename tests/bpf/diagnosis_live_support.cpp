#include "tests/bpf/diagnosis_live_support.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <doctest/doctest.h>
#include <fstream>

#include "diagnosis/correlator.h"

namespace causeway::test {
namespace {

// Kills the workload if the test leaves before it was reaped (it would wait for --wait-file).
struct Reaper {
  pid_t pid;
  bool reaped = false;
  ~Reaper() {
    if (!reaped && pid > 0) {
      ::kill(pid, SIGKILL);
      wait_exit(pid);
    }
  }
};

}  // namespace

std::vector<std::string> workload(std::vector<std::string> args) {
  args.insert(args.begin(), testprog("cw_workload"));
  return args;
}

Traced trace_program(const TempDir& dir, std::vector<std::string> argv, const std::vector<std::string>& tracer_args) {
  const std::string ready = dir.file("w.ready"), go = dir.file("w.go");
  argv.insert(argv.end(), {"--ready-file", ready, "--wait-file", go});
  Traced r;
  r.pid = spawn(argv, dir.file("w.log"));
  Reaper reaper{r.pid};
  wait_for_file(ready);
  std::vector<std::string> targs{"--pid", S(r.pid)};
  targs.insert(targs.end(), tracer_args.begin(), tracer_args.end());
  Tracer t(dir, targs);
  const auto t0 = std::chrono::steady_clock::now();
  { std::ofstream(go.c_str()) << "go"; }
  const int rc = wait_exit(r.pid);
  reaper.reaped = true;
  r.workload_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(read_file(dir.file("w.log")));
  REQUIRE(rc == 0);
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  r.db = t.db();
  r.log = t.log();
  return r;
}

Traced trace_workload(const TempDir& dir, std::vector<std::string> args) { return trace_program(dir, workload(std::move(args))); }

json explain(const std::string& db) {
  auto r = run_causeway({"explain", "--json", "--limit", "200", "--db", db});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  json doc = json::parse(r.out);
  REQUIRE(doc.contains("chains"));
  return doc["chains"];
}

json chains_of(const std::string& db) {
  json chains = explain(db);
  if (chains.empty()) {
    auto n = diagnose_and_store(db);
    REQUIRE_MESSAGE(static_cast<bool>(n), (n ? std::string() : n.error().message));
    chains = explain(db);
  }
  return chains;
}

std::string brief(const std::string& db, const json& chains) {
  std::string out;
  for (const json& c : chains) {
    out += c.value("severity", "?") + " " + c.value("cause", "?") + " pid " + S(c.value("pid", 0)) + " tid " +
           S(c.value("tid", 0)) + " " + c.value("op", "") + " " + c.value("where", "") + " calls " + S(c.value("calls", 0)) +
           " lost_us " + S(c.value("lost_us", 0)) + " culprit " + (c.contains("culprit") ? c["culprit"].dump() : "none");
    if (c.contains("culprit") && c["culprit"].contains("pid"))
      out += " (" + q_text(db, "SELECT coalesce(cmdline, comm) FROM processes WHERE pid = " + S(c["culprit"].value("pid", 0)) +
                               " LIMIT 1") + ")";
    out += "\n";
  }
  return out;
}

json find_chain(const json& chains, pid_t pid, const std::string& cause) {
  for (const json& c : chains)
    if (c.value("pid", 0) == pid && c.value("cause", "") == cause) return c;
  return nullptr;
}

void check_no_unexplained(const json& chains, pid_t pid) {
  for (const json& c : chains)
    if (c.value("pid", 0) == pid && (c.value("cause", "") == "gpu_wait" || c.value("cause", "") == "unknown")) {
      INFO(c.value("summary", ""));
      CHECK(c.value("severity", "") == "LOW");
    }
}

void check_strong(const json& c) {
  CHECK(c.value("severity", "") != "LOW");
  CHECK(c.value("severity", "") != "");
  REQUIRE(c.contains("evidence"));
  CHECK(c["evidence"].is_array());
  CHECK(!c["evidence"].empty());
  CHECK(c.value("calls", 0) > 0);
  CHECK(!c.value("summary", std::string()).empty());
  REQUIRE(c.contains("culprit"));
  CHECK(c["culprit"].is_object());
}

std::string system_python() { return ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : ""; }

}  // namespace causeway::test
