// /proc parsing: maps lines, mapping lookup, a live process's identity (cgroups:
// test_collector_cgroups.cpp).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "collector/cgroup_paths.h"
#include "collector/proc_info.h"
#include "collector/proc_maps.h"
#include "collector/symbolizer.h"

using namespace causeway::collector;

namespace {
std::string read_text(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("maps lines parse, including paths with spaces and (deleted)") {
  const char* text =
      "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1234 /usr/bin/python3.12\n"
      "7f1200000000-7f1200100000 r-xp 00022000 103:02 998877 /opt/my env/lib/libcudart.so.12.4.127\n"
      "7f1300000000-7f1300001000 rw-p 00000000 00:00 0 \n"
      "7f1400000000-7f1400010000 r-xp 00000000 fd:01 55 /tmp/libnccl.so.2 (deleted)\n"
      "garbage line\n"
      "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n";
  auto maps = parse_maps(text);
  REQUIRE(maps.size() == 5);
  CHECK(maps[0].start == 0x55d0c0a00000);
  CHECK(!maps[0].exec);
  CHECK(maps[1].exec);
  CHECK(maps[1].offset == 0x22000);
  CHECK(maps[1].dev_major == 0x103);
  CHECK(maps[1].dev_minor == 2);
  CHECK(maps[1].inode == 998877);
  CHECK(maps[1].path == "/opt/my env/lib/libcudart.so.12.4.127");
  CHECK(maps[2].path.empty());
  CHECK(base_name(maps[3].path) == "libnccl.so.2");
  CHECK(maps[4].path == "[stack]");
  CHECK(find_mapping(maps, 0x7f1200000010) == &maps[1]);
  CHECK(find_mapping(maps, 0x7f1200100000) == nullptr);
  CHECK(find_mapping(maps, 0x10) == nullptr);
}

TEST_CASE("our own maps are readable and contain this test binary") {
  auto maps = read_maps(static_cast<uint32_t>(::getpid()));
  REQUIRE(!maps.empty());
  const Mapping* m = find_mapping(maps, reinterpret_cast<uint64_t>(&parse_maps));
  REQUIRE(m != nullptr);
  CHECK(m->exec);
}

TEST_CASE("stack hashes are stable, positive and order-sensitive") {
  std::vector<std::string> a{"libcudart.so.13!cudaMalloc+0x4", "app!main+0x10"};
  std::vector<std::string> b{"app!main+0x10", "libcudart.so.13!cudaMalloc+0x4"};
  CHECK(stack_hash(a) == stack_hash(a));
  CHECK(stack_hash(a) != stack_hash(b));
  CHECK(static_cast<int64_t>(stack_hash(a)) > 0);
}

TEST_CASE("the live process identity of this test") {
  auto p = read_process(static_cast<uint32_t>(::getpid()));
  CHECK(!p.comm.empty());
  CHECK(!p.exe.empty());
  CHECK(p.ppid.has_value());
  // Its cgroup path is the one /proc/self/cgroup gives, and its id the v2 folder's inode.
  CHECK(p.cgroup_path == process_cgroup_path(parse_proc_cgroup(read_text("/proc/self/cgroup"))));
  if (cgroup2_mount()) {
    auto m = parse_proc_cgroup(read_text("/proc/self/cgroup"));
    REQUIRE(m.v2);
    struct stat st {};
    REQUIRE(::stat((*cgroup2_mount() + *m.v2).c_str(), &st) == 0);
    CHECK(p.cgroup_id == st.st_ino);
  }
}
