// ELF symbol lookup (attach side) and address → symbol (symbolization side), on this test
// binary itself, on a copy with .symtab stripped, and on MiniDebugInfo when xz is around.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "collector/attacher.h"
#include "collector/elf_file.h"
#include "collector/proc_maps.h"
#include "collector/source_lines.h"
#include "collector/stack_resolver.h"
#include "collector/symbolizer.h"
#include "tracedb/open.h"
#include "tests/support/test_support.h"

using namespace causeway::collector;

constexpr int kMarkerLine = __LINE__ + 1;
extern "C" __attribute__((noinline, used)) int cw_unit_marker_function(int x) { return x * 3 + 1; }

namespace {
std::string self_exe() { return std::filesystem::read_symlink("/proc/self/exe").string(); }
bool have(const char* tool) { return std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) == 0; }
}  // namespace

TEST_CASE("symbols by name, offsets and back") {
  auto elf = ElfFile::load(self_exe());
  REQUIRE(elf.ok());
  auto sym = (*elf)->find("cw_unit_marker_function");
  REQUIRE(sym.has_value());
  CHECK(sym->size > 0);
  auto off = (*elf)->vaddr_to_offset(sym->vaddr);
  REQUIRE(off.has_value());
  CHECK((*elf)->offset_to_vaddr(*off) == sym->vaddr);
  CHECK((*elf)->symbolize(sym->vaddr + 2) == std::string("cw_unit_marker_function+0x2"));
  CHECK(!(*elf)->build_id().empty());
  CHECK((*elf)->read_bytes(*off, 4).size() == 4);
  CHECK(!(*elf)->find("no_such_function_anywhere"));
}

TEST_CASE("the runtime address of a function symbolizes through the process maps") {
  Symbolizer s;
  const auto pid = static_cast<uint32_t>(::getpid());
  s.snapshot(pid);
  std::string f = s.frame(pid, reinterpret_cast<uint64_t>(&cw_unit_marker_function) + 1);
  CHECK(f.find("!cw_unit_marker_function+0x1") != std::string::npos);
  // Unknown addresses keep a module+offset or raw form; never dropped.
  CHECK(!s.frame(pid, 0x10).empty());
  auto frames = s.frames(pid, {reinterpret_cast<uint64_t>(&cw_unit_marker_function), 0x10});
  CHECK(frames.size() == 2);
}

namespace {
__attribute__((noinline)) uint64_t return_address_here() {
  return reinterpret_cast<uint64_t>(__builtin_extract_return_addr(__builtin_return_address(0)));
}
}  // namespace

TEST_CASE("native frames carry file:line from the module's DWARF line table (this test is built with -g)") {
  Symbolizer s;
  const auto pid = static_cast<uint32_t>(::getpid());
  s.snapshot(pid);
  const int call_line = __LINE__ + 1;
  const uint64_t ret = return_address_here();
  // A caller's frame holds the return address; its line is the call's, not the next one's.
  const std::string f = s.frame(pid, ret);
  CHECK(f.find("(test_collector_elf.cpp:" + std::to_string(call_line) + ")") != std::string::npos);
  // A function's first byte: the line of its opening.
  const std::string entry = s.frame(pid, reinterpret_cast<uint64_t>(&cw_unit_marker_function));
  CHECK(entry.find("!cw_unit_marker_function+0x0 (test_collector_elf.cpp:" + std::to_string(kMarkerLine) + ")") !=
        std::string::npos);
  // Dropping the DWARF readers changes nothing but memory.
  s.release_lines();
  CHECK(s.frame(pid, ret) == f);
  // The same function in a copy without debug info: no line, never a guess.
  REQUIRE(have("objcopy"));
  causeway::test::TempDir dir;
  const std::string nodebug = dir.file("nodebug");
  REQUIRE(std::system(("objcopy --strip-debug " + self_exe() + " " + nodebug).c_str()) == 0);
  auto elf = ElfFile::load(nodebug);
  REQUIRE(elf.ok());
  auto sym = (*elf)->find("cw_unit_marker_function");
  REQUIRE(sym.has_value());
  SourceLines lines;
  CHECK(!lines.lookup(nodebug, "", sym->vaddr, sym->vaddr));
  auto line = lines.lookup(self_exe(), "", sym->vaddr, sym->vaddr);
  REQUIRE(line.has_value());
  CHECK(line->file == "test_collector_elf.cpp");
  CHECK(line->line == kMarkerLine);
}

TEST_CASE("locate on one thread, resolve on another: the StackResolver hands the writer the same frames") {
  Symbolizer s;
  const auto pid = static_cast<uint32_t>(::getpid());
  s.snapshot(pid);
  const std::vector<uint64_t> ips{reinterpret_cast<uint64_t>(&cw_unit_marker_function) + 1, 0x10};
  auto locs = s.locate(pid, ips);
  REQUIRE(locs.size() == 2);
  CHECK(locs[0].in_file);
  CHECK(!locs[1].in_file);
  // The id is known before any symbol is loaded, and is the same for the same code path.
  CHECK(stack_hash(locs) == stack_hash(s.locate(pid, ips)));
  CHECK(stack_hash(locs) != stack_hash(s.locate(pid, {ips[0]})));
  const std::vector<std::string> expected = s.frames(pid, ips);

  causeway::test::TempDir dir;
  const std::string db = dir.file("t.db");
  auto w = causeway::StoreWriter::open(db);
  REQUIRE(w.ok());
  causeway::SessionInfo si;
  si.source_kind = "live";
  si.started_ns = 1;
  REQUIRE((*w)->begin_session(si).ok());
  const uint64_t id = stack_hash(locs);
  {
    Symbolizer fresh;  // nothing cached: resolve() loads the ELF file on the resolver's thread
    StackResolver r(fresh, **w);
    r.submit(id, std::move(locs));
    r.finish();
  }
  REQUIRE((*w)->close(2).ok());
  auto ro = causeway::open_read_only(db);
  REQUIRE(ro.ok());
  auto frames = causeway::query_int(ro->get(), ("SELECT json_array_length(frames) FROM stacks WHERE id = " +
                                                 std::to_string(static_cast<int64_t>(id))).c_str());
  REQUIRE(frames.ok());
  CHECK(frames->value_or(-1) == 2);
  causeway::Statement st = std::move(*causeway::Statement::prepare(ro->get(), "SELECT frames FROM stacks"));
  REQUIRE(st.step() == SQLITE_ROW);
  const std::string text = st.col_text(0);
  CHECK(text.find(expected[0]) != std::string::npos);
  CHECK(text.find(expected[1]) != std::string::npos);
}

TEST_CASE("demangled C++ names") {
  auto elf = ElfFile::load(self_exe());
  REQUIRE(elf.ok());
  auto sym = (*elf)->find("_ZN8causeway9collector9parse_mapsESt17basic_string_viewIcSt11char_traitsIcEE");
  if (sym) CHECK((*elf)->symbolize(sym->vaddr)->rfind("causeway::collector::parse_maps(", 0) == 0);
}

TEST_CASE("stripped binary: .dynsym only, and MiniDebugInfo (.gnu_debugdata)") {
  if (!have("objcopy") || !have("xz") || !have("nm")) {
    MESSAGE("objcopy/xz/nm not installed: MiniDebugInfo case not exercised");
    return;
  }
  causeway::test::TempDir dir;
  const std::string stripped = dir.file("stripped"), mini = dir.file("mini");
  REQUIRE(std::system(("objcopy --strip-all " + self_exe() + " " + stripped).c_str()) == 0);
  auto s = ElfFile::load(stripped);
  REQUIRE(s.ok());
  CHECK(!(*s)->has_symtab());
  CHECK(!(*s)->find("cw_unit_marker_function"));

  // The Fedora recipe: function symbols in an xz-compressed ELF inside .gnu_debugdata.
  const std::string d = dir.path();
  std::string cmd = "cd " + d + " && nm -D " + self_exe() +
                    " --format=posix --defined-only | awk '{print $1}' | sort > dynsyms && nm " + self_exe() +
                    " --format=posix --defined-only | awk '{ if ($2 == \"T\" || $2 == \"t\") print $1 }' | sort > funcsyms && "
                    "comm -13 dynsyms funcsyms > keep && objcopy --only-keep-debug " + self_exe() +
                    " debug && objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep debug mini_debuginfo && "
                    "xz -f mini_debuginfo && cp stripped mini && objcopy --add-section .gnu_debugdata=mini_debuginfo.xz mini";
  REQUIRE(std::system(cmd.c_str()) == 0);
  auto m = ElfFile::load(mini);
  REQUIRE(m.ok());
  CHECK((*m)->has_debugdata());
  auto sym = (*m)->find("cw_unit_marker_function");
  REQUIRE(sym.has_value());
  CHECK((*m)->symbolize(sym->vaddr + 1) == std::string("cw_unit_marker_function+0x1"));
}

TEST_CASE("entry planning: endbr64 skipped, emulated first instructions are fast") {
  auto p = plan_entry({0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5});
  CHECK(p.skip == 4);
  CHECK(p.fast);
  p = plan_entry({0x41, 0x57, 0x49, 0x89});  // push %r15
  CHECK(p.skip == 0);
  CHECK(p.fast);
  p = plan_entry({0x48, 0x83, 0xec, 0x08});  // sub $8,%rsp: single-stepped
  CHECK(!p.fast);
  p = plan_entry({0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xe5});  // endbr64; mov
  CHECK(p.skip == 4);
  CHECK(!p.fast);
}

TEST_CASE("xz decompression rejects garbage") {
  const uint8_t junk[] = {1, 2, 3, 4, 5};
  CHECK(xz_decompress(junk, sizeof(junk)).empty());
}
