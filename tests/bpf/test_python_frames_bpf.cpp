// Python frames of live CUDA calls: each CPython 3.10-3.13 on the host (Debian's python3 on
// PATH, pyenv's under $PYENV_ROOT) runs a script that calls the real libcudart through ctypes
// from known lines — in nested functions, in an imported module, and from a second thread.
// The trace must store those exact lines and functions, and get_stacks must show them first.
#include <doctest/doctest.h>

#include <signal.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "diagnosis/stacks.h"
#include "tests/bpf/collector_harness.h"
#include "tests/support/cpython.h"

namespace causeway::test {

namespace {

namespace fs = std::filesystem;

const char* kModule = R"(def sync_from_module(rt, n):
    for _ in range(n):
        rt.cudaStreamSynchronize(None)  # @module
)";

const char* kScript = R"(import ctypes, sys, threading, time
sys.path.insert(0, sys.argv[2])
import helper_mod
rt = ctypes.CDLL(sys.argv[1])

def inner(n):
    for _ in range(n):
        rt.cudaDeviceSynchronize()  # @inner

def outer(n):
    inner(n)  # @outer

def worker(n):
    for _ in range(n):
        rt.cudaEventSynchronize(None)  # @thread

# The collector learns the interpreter's layout on the process's first traced call; keep
# calling for a while so later calls carry Python frames.
for _ in range(40):
    outer(20)
    helper_mod.sync_from_module(rt, 20)
    t = threading.Thread(target=worker, args=(20,))
    t.start()
    t.join()
    time.sleep(0.01)
)";

int line_of(const std::string& text, const std::string& marker) {
  std::istringstream in(text);
  int n = 0;
  for (std::string l; std::getline(in, l);) {
    ++n;
    if (l.find(marker) != std::string::npos) return n;
  }
  return 0;
}

std::string real_cudart() {
  const char* home = std::getenv("CUDA_HOME");
  const std::string p = std::string(home && *home ? home : "/usr/local/cuda") + "/lib64/libcudart.so.13";
  std::error_code ec;
  return fs::exists(p, ec) ? p : "";
}

}  // namespace

TEST_CASE("CPython 3.10-3.13: the executing line of each frame of a live CUDA call") {
  const std::string cudart = real_cudart();
  const auto interps = find_cpythons(10, 13);
  if (cudart.empty() || interps.empty()) {
    std::printf("SKIPPED: %s\n", cudart.empty() ? "no CUDA 13 libcudart ($CUDA_HOME or /usr/local/cuda)"
                                                 : "no CPython 3.10-3.13 on PATH or under pyenv");
    std::exit(77);
  }
  TempDir dir;
  {
    std::ofstream(dir.file("script.py")) << kScript;
    std::ofstream(dir.file("helper_mod.py")) << kModule;
  }
  const int l_inner = line_of(kScript, "@inner"), l_outer = line_of(kScript, "@outer"),
            l_thread = line_of(kScript, "@thread"), l_module = line_of(kModule, "@module");

  Tracer t(dir, {"--lib", cudart});
  std::map<std::string, pid_t> pids;  // interpreter path → pid
  std::set<std::string> versions;
  for (const CPython& in : interps) {
    pid_t pid = spawn({in.path, dir.file("script.py"), cudart, dir.path()}, dir.file("py.log"));
    REQUIRE(wait_exit(pid) == 0);
    pids[in.path] = pid;
    versions.insert(in.version);
  }
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  const std::string db = t.db();
  INFO(t.log());
  MESSAGE("interpreters: " << interps.size() << " (versions " << versions.size() << ")");

  const std::string script = dir.file("script.py"), module = dir.file("helper_mod.py");
  for (const CPython& in : interps) {
    const pid_t pid = pids[in.path];
    CAPTURE(in.path);
    auto has = [&](const std::string& op, const std::string& like) {
      return q_int(db, "SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id JOIN stacks s ON s.id = e.stack_id"
                       " WHERE e.pid = " + std::to_string(pid) + " AND o.name = '" + op + "' AND s.frames LIKE '" +
                       like + "'");
    };
    // Nested functions: innermost line, then its caller's line, in that order.
    CHECK(has("cudaDeviceSynchronize", "%\"" + script + ":" + std::to_string(l_inner) + " (inner)\",\"" + script + ":" +
                                           std::to_string(l_outer) + " (outer)\"%") > 0);
    // A module imported by the script.
    CHECK(has("cudaStreamSynchronize", "%\"" + module + ":" + std::to_string(l_module) + " (sync_from_module)\"%") > 0);
    // A thread other than the main one.
    CHECK(has("cudaEventSynchronize", "%\"" + script + ":" + std::to_string(l_thread) + " (worker)\"%") > 0);
    // No made-up native frame: libffi has no frame pointers, the walk stops and says so.
    CHECK(q_int(db, "SELECT count(*) FROM events e JOIN stacks s ON s.id = e.stack_id WHERE e.pid = " +
                        std::to_string(pid) + " AND s.frames LIKE '%[stack]%'") == 0);
  }

  // get_stacks (what MCP returns): the Python line is the first frame, as an object.
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  StackQuery q;
  q.op = "cudaDeviceSynchronize";
  q.limit = 50;
  auto r = top_stacks(h, q);
  REQUIRE(r);
  const auto j = stacks_to_json(r.value());
  int python_first = 0;
  for (const auto& s : j["stacks"]) {
    const auto& f = s["frames"][0];
    if (f["kind"] == "python") {
      CHECK(f["file"] == script);
      CHECK(f["line"] == l_inner);
      CHECK(f["function"] == "inner");
      CHECK(f["module"] == "script");
      ++python_first;
    }
  }
  CHECK(python_first >= 1);  // the same lines in every interpreter: one stack id
  sqlite3_close(h);

  // Perfetto export: the Python frames ride in the slice's args.
  const std::string out = dir.file("trace.json");
  REQUIRE(run_causeway({"export", "--format", "perfetto", "--db", db, "-o", out}).exit_code == 0);
  std::ifstream in(out);
  const std::string exported((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(exported.find("\"python\":\"" + script + ":" + std::to_string(l_inner) + " (inner) <- " + script + ":" +
                      std::to_string(l_outer) + " (outer)") != std::string::npos);
}

}  // namespace causeway::test
