// CPython support without BPF: line tables decoded exactly as each interpreter's own
// co_lines() says, interpreters found and their offsets chosen (3.13's _Py_DebugOffsets agree
// with the header table), unknown versions refused; stored frame text parsed into objects.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "diagnosis/frames.h"
#include "collector/python_runtime.h"
#include "common/stack_text.h"
#include "tests/support/cpython.h"

namespace causeway::test {

using collector::PyStatus;

namespace {

// Prints, for a few code objects, firstlineno, the line table and co_lines() as JSON.
const char* kDump = R"(import json, sys
def f(a, b):
    x = a + b
    if x > 3:
        y = [i * 2
             for i in range(x)]
    else:
        y = None
    try:
        z = len(y) / 0
    except Exception:
        z = -1
    return (x,
            y, z)
class C:
    def m(self):
        return f(1, 2)
out = []
for co in (f.__code__, C.m.__code__, sys._getframe().f_code):
    out.append({"first": co.co_firstlineno, "table": co.co_linetable.hex(),
                "lines": [[s, e, l] for s, e, l in co.co_lines()]})
print(json.dumps(out))
)";

// A process of `python` that stays up until killed.
struct Sleeper {
  pid_t pid = -1;
  explicit Sleeper(const std::string& python) {
    pid = fork();
    if (pid == 0) {
      execl(python.c_str(), python.c_str(), "-c", "import time; time.sleep(30)", static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Sleeper() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

}  // namespace

TEST_CASE("line tables: every code unit maps to the line co_lines() gives, in every CPython 3.10-3.13") {
  const auto pys = find_cpythons(10, 13);
  if (pys.empty()) MESSAGE("no CPython 3.10-3.13 found: line-table case has nothing to check");
  for (const CPython& py : pys) {
    CAPTURE(py.path);
    auto r = run_process({py.path, "-c", kDump});
    REQUIRE(r.exit_code == 0);
    const auto codes = nlohmann::json::parse(r.out);
    const int minor = std::stoi(py.version.substr(2));
    for (const auto& c : codes) {
      std::vector<uint8_t> table;
      const std::string hex = c["table"];
      for (size_t i = 0; i + 1 < hex.size(); i += 2) table.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      int checked = 0;
      for (const auto& l : c["lines"]) {
        const int expected = l[2].is_null() ? 0 : l[2].get<int>();
        for (uint64_t byte = l[0].get<uint64_t>(); byte < l[1].get<uint64_t>(); byte += 2, ++checked) {
          CAPTURE(byte);
          CHECK(collector::py_line_for(minor, table, c["first"].get<int>(), byte / 2) == expected);
        }
      }
      CHECK(checked > 0);
    }
  }
}

TEST_CASE("interpreters are found by _PyRuntime; 3.13 offsets come from the interpreter and match the table") {
  const auto pys = find_cpythons(10, 13);
  if (pys.empty()) MESSAGE("no CPython 3.10-3.13 found: detection case has nothing to check");
  for (const CPython& py : pys) {
    CAPTURE(py.path);
    Sleeper s(py.path);
    collector::PyProcess p;
    for (int i = 0; i < 100 && p.status != PyStatus::supported; ++i) {  // until the loader mapped it
      usleep(20'000);
      p = collector::detect_python(static_cast<uint32_t>(s.pid), collector::read_maps(static_cast<uint32_t>(s.pid)));
    }
    REQUIRE(p.status == PyStatus::supported);
    CHECK(p.version == py.version);
    CHECK(p.layout.proc.runtime != 0);
    const auto table = collector::py_layout_table(p.layout.minor);
    REQUIRE(table);
    if (p.layout.minor >= 13) CHECK(p.layout.source.find("_Py_DebugOffsets") != std::string::npos);
    CHECK(std::memcmp(&table->proc.interp_head, &p.layout.proc.interp_head,
                      offsetof(cw_py_proc, _pad) - offsetof(cw_py_proc, interp_head)) == 0);
    CHECK(table->code.filename == p.layout.code.filename);
    CHECK(table->code.qualname == p.layout.code.qualname);
    CHECK(table->code.linetable == p.layout.code.linetable);
    CHECK(table->code.firstlineno == p.layout.code.firstlineno);
    CHECK(table->code.code_adaptive == p.layout.code.code_adaptive);
  }
}

TEST_CASE("an interpreter outside the table is reported, never read") {
  CHECK_FALSE(collector::py_layout_table(9));
  CHECK_FALSE(collector::py_layout_table(14));
  const auto old = find_cpythons(7, 9);  // 3.7 introduced _PyRuntime, what detection keys on
  if (old.empty()) {
    MESSAGE("no CPython 3.7-3.9 found: live refusal not checked");
    return;
  }
  Sleeper s(old.front().path);
  collector::PyProcess p;
  for (int i = 0; i < 100 && p.status == PyStatus::not_python; ++i) {
    usleep(20'000);
    p = collector::detect_python(static_cast<uint32_t>(s.pid), collector::read_maps(static_cast<uint32_t>(s.pid)));
  }
  CHECK(p.status == PyStatus::unsupported);
  CHECK(p.why.find("not in the offset table") != std::string::npos);
}

TEST_CASE("_Py_DebugOffsets: a wrong cookie, version or a free-threaded build is refused") {
  std::vector<uint8_t> d(71 * 8, 0);
  std::memcpy(d.data(), "xdebugpy", 8);
  uint64_t v = 0x030d00f0;
  std::memcpy(d.data() + 8, &v, 8);
  CHECK(collector::py_layout_from_debug_offsets(d.data(), d.size(), 13));
  CHECK_FALSE(collector::py_layout_from_debug_offsets(d.data(), d.size(), 14));
  uint64_t ft = 1;
  std::memcpy(d.data() + 16, &ft, 8);
  CHECK_FALSE(collector::py_layout_from_debug_offsets(d.data(), d.size(), 13));
  d[0] = 'y';
  CHECK_FALSE(collector::py_layout_from_debug_offsets(d.data(), d.size(), 13));
}

TEST_CASE("stored frames parse into objects; the user frame comes first") {
  auto py = parse_frame("/srv/job/train.py:142 (Trainer.step)");
  REQUIRE(py);
  CHECK(py->kind == FrameKind::python);
  CHECK(*py->file == "/srv/job/train.py");
  CHECK(py->line == 142);
  CHECK(py->function == "Trainer.step");
  CHECK(py->module == "train");
  auto nat = parse_frame("libfoo.so!foo(int)+0x1c (foo.cpp:12)");
  REQUIRE(nat);
  CHECK(nat->kind == FrameKind::native);
  CHECK(nat->module == "libfoo.so");
  CHECK(nat->function == "foo(int)");
  CHECK(*nat->file == "foo.cpp");
  CHECK(nat->line == 12);
  auto bare = parse_frame("libffi.so.8.1.2+0x6f7a");
  REQUIRE(bare);
  CHECK(bare->module == "libffi.so.8.1.2");
  CHECK_FALSE(bare->file);
  CHECK_FALSE(parse_frame(kStackCutMarker));

  const std::vector<std::string> stack = {"libcudart.so.13!cudaDeviceSynchronize+0x0", "libffi.so.8.1.2+0x6f7a",
                                          "/a/s.py:7 (inner)", "/a/s.py:10 (outer)", std::string(kStackCutMarker)};
  const auto ordered = user_first_texts(stack);
  REQUIRE(ordered.size() == 4);
  CHECK(ordered[0] == "/a/s.py:7 (inner)");
  CHECK(ordered[1] == "libcudart.so.13!cudaDeviceSynchronize+0x0");
  CHECK(ordered[3] == "/a/s.py:10 (outer)");
  CHECK(parse_stack(stack).cut);
  // Native only: the first frame outside CUDA, libc and the interpreter.
  const auto native = user_first_texts({"libcudart.so.13!cudaMemcpy+0x4", "libc.so.6!memcpy+0x1", "app!step+0x10",
                                        "app!main+0x20"});
  CHECK(native[0] == "app!step+0x10");
  CHECK(frame_json_text(frame_to_json(*py)) == "/srv/job/train.py:142 (Trainer.step)");
}

}  // namespace causeway::test
