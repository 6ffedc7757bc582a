// The foundation's command line as a user runs it: real binary, real files, real signals.
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/test_support.h"
#include "tracedb/open.h"

using namespace causeway;
using causeway::test::run_causeway;
using causeway::test::TempDir;
using nlohmann::json;

extern char** environ;

namespace {

int64_t count(const std::string& path, const std::string& sql) {
  auto db = open_read_only(path);
  REQUIRE(db.ok());
  return query_int(db->get(), sql)->value_or(-1);
}

std::vector<std::string> scenario_names() {
  auto r = run_causeway({"demo", "--list"});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t nl = r.out.find('\n', pos);
    std::string line = r.out.substr(pos, nl - pos);
    if (!line.empty()) names.push_back(line.substr(0, line.find(' ')));
    pos = nl == std::string::npos ? r.out.size() : nl + 1;
  }
  return names;
}

}  // namespace

TEST_CASE("version, help with examples on every subcommand, and usage errors exit 2") {
  auto v = run_causeway({"version"});
  CHECK(v.exit_code == 0);
  CHECK(v.out.rfind("causeway ", 0) == 0);
  for (const char* sub : {"demo", "stats", "migrate", "version"}) {
    auto h = run_causeway({sub, "--help"});
    CAPTURE(sub);
    CHECK(h.exit_code == 0);
    CHECK(h.out.find("Example") != std::string::npos);
  }
  CHECK(run_causeway({}).exit_code == 2);
  CHECK(run_causeway({"frobnicate"}).exit_code == 2);
  CHECK(run_causeway({"stats", "--no-such-flag"}).exit_code == 2);
  auto bad = run_causeway({"stats", "--since", "5parsecs", "--db", "/nonexistent/x.db"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("5parsecs") != std::string::npos);
  // Contradicting flags are refused before anything starts, not resolved silently (issue #38).
  auto both = run_causeway({"trace", "--no-requests", "--http-port", "8000", "--db", "/nonexistent/x.db"});
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("--http-port") != std::string::npos);
  CHECK(both.err.find("--no-requests") != std::string::npos);
}

TEST_CASE("a missing DB is a clear runtime error, as text or as one JSON document") {
  TempDir dir;
  auto r = run_causeway({"stats", "--db", dir.file("none.db")});
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find("no trace DB") != std::string::npos);
  auto j = run_causeway({"stats", "--json", "--db", dir.file("none.db")});
  CHECK(j.exit_code == 1);
  auto doc = json::parse(j.out);
  CHECK(doc["error"]["code"] == "db_missing");
  CHECK(doc["error"]["message"].get<std::string>().find("causeway demo") != std::string::npos);
  CHECK_FALSE(test::file_exists(dir.file("none.db")));
  // CAUSEWAY_DB is the default --db.
  auto env = run_causeway({"stats"}, {"CAUSEWAY_DB=" + dir.file("env.db")});
  CHECK(env.err.find(dir.file("env.db")) != std::string::npos);
}

TEST_CASE("demo lists at least 8 scenarios; each yields stats in the documented shape") {
  auto names = scenario_names();
  CHECK(names.size() >= 8);
  TempDir dir;
  for (const auto& name : names) {
    CAPTURE(name);
    std::string db = dir.file(name + ".db");
    auto d = run_causeway({"demo", name, "--db", db, "--seed", "5", "--events", "40000"});
    REQUIRE(d.exit_code == 0);
    auto s = run_causeway({"stats", "--json", "--db", db});
    REQUIRE(s.exit_code == 0);
    auto doc = json::parse(s.out);  // exactly one JSON document on stdout
    REQUIRE(doc.contains("window"));
    CHECK(doc["window"]["from_ns"].get<int64_t>() < doc["window"]["to_ns"].get<int64_t>());
    REQUIRE(doc["ops"].is_array());
    CHECK(doc["ops"].size() > 0);
    for (const auto& o : doc["ops"]) {
      for (const char* k : {"source", "op", "pid", "comm", "count", "total_us", "p50_us", "p95_us", "p99_us", "max_us",
                            "errors"})
        CHECK(o.contains(k));
      CHECK(o["p50_us"].get<double>() <= o["p95_us"].get<double>());
      CHECK(o["p95_us"].get<double>() <= o["p99_us"].get<double>());
      CHECK(o["p99_us"].get<double>() <= o["max_us"].get<double>());
      std::string src = o["source"];
      CHECK((src == "cuda" || src == "driver" || src == "nccl" || src == "host" || src == "io" || src == "net" ||
             src == "mem"));
    }
    CHECK(doc["host"].is_array());
    CHECK(doc["dropped"]["ring"] == 0);
    CHECK(doc["dropped"]["writer"] == 0);
    // Same seed, same data: a second run writes the same counts.
    auto table = run_causeway({"stats", "--db", db});
    CHECK(table.exit_code == 0);
    CHECK(table.out.find("P99") != std::string::npos);
  }
  auto unknown = run_causeway({"demo", "no-such-scenario", "--db", dir.file("x.db")});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("incident") != std::string::npos);  // lists the valid ones
}

TEST_CASE("SIGINT mid-run flushes everything accepted and exits 0") {
  TempDir dir;
  std::string db = dir.file("big.db");
  std::string bin = test::causeway_bin();
  std::vector<std::string> args = {bin, "demo", "quiet", "--events", "50000000", "--db", db};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, bin.c_str(), nullptr, nullptr, argv.data(), environ) == 0);
  // Wait until the writer has committed something, then interrupt.
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    struct stat st {};
    if (::stat((db + "-wal").c_str(), &st) == 0 && st.st_size > (4 << 20)) break;
  }
  REQUIRE(::kill(pid, SIGINT) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  int64_t events = count(db, "SELECT count(*) FROM events");
  int64_t sched = count(db, "SELECT count(*) FROM sched") + count(db, "SELECT count(*) FROM wakeups");
  CHECK(events > 0);
  CHECK(events < 50'000'000);  // it really was interrupted
  CHECK(count(db, "SELECT value FROM collector_stats WHERE name = 'events_accepted'") == events + sched);
  CHECK(count(db, "SELECT value FROM collector_stats WHERE name = 'events_written'") == events + sched);
  CHECK(count(db, "SELECT sum(count) FROM rollups WHERE op_id NOT IN (400, 401)") == events);
  CHECK(count(db, "SELECT stopped_ns IS NOT NULL FROM sessions") == 1);
}

TEST_CASE("readers work on a copy in a folder they cannot write, WAL or not, and create nothing") {
  TempDir dir;
  std::string src = dir.file("src.db");
  REQUIRE(run_causeway({"demo", "incident", "--db", src, "--events", "30000"}).exit_code == 0);
  for (bool wal : {false, true}) {
    CAPTURE(wal);
    std::string ro_dir = dir.file(wal ? "ro-wal" : "ro");
    std::filesystem::create_directory(ro_dir);
    std::filesystem::copy_file(src, ro_dir + "/trace.db");
    if (wal) {
      // A copy taken while a writer had the DB in WAL mode (no -shm travels with it).
      sqlite3* h = nullptr;
      sqlite3_open((ro_dir + "/trace.db").c_str(), &h);
      sqlite3_exec(h, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
      sqlite3_close(h);
      std::filesystem::remove(ro_dir + "/trace.db-wal");
      std::filesystem::remove(ro_dir + "/trace.db-shm");
    }
    ::chmod((ro_dir + "/trace.db").c_str(), 0444);
    ::chmod(ro_dir.c_str(), 0555);
    ::chmod(dir.path().c_str(), 0755);
    // Root ignores permission bits, so run the reader as an unprivileged user when root —
    // from a copy of the binary in this test's folder, since the build folder may sit under
    // a directory that user cannot enter.
    std::vector<std::string> argv;
    std::string bin = test::causeway_bin();
    if (::geteuid() == 0) {
      bin = dir.file("causeway-copy");
      if (!test::file_exists(bin)) std::filesystem::copy_file(test::causeway_bin(), bin);
      ::chmod(bin.c_str(), 0755);
      argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
    }
    argv.insert(argv.end(), {bin, "stats", "--json", "--db", ro_dir + "/trace.db"});
    auto r = test::run_process(argv);
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    auto doc = json::parse(r.out, nullptr, false);
    REQUIRE_FALSE(doc.is_discarded());
    CHECK(doc["ops"].size() > 0);
    size_t files = 0;
    for (auto& e : std::filesystem::directory_iterator(ro_dir)) files += e.is_regular_file() ? 1 : 0;
    CHECK(files == 1);
  }
}
