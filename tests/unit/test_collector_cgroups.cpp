// cgroups: /proc/PID/cgroup of v1, v2 and hybrid hosts, container and pod ids of every common
// runtime layout, the cgroup2 mount from mountinfo, and resolving ids (folder inodes) to paths
// through a real folder tree and a real trace DB.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "collector/cgroup_paths.h"
#include "collector/cgroup_resolver.h"
#include "tests/support/test_support.h"
#include "tracedb/open.h"
#include "tracedb/sqlite_handle.h"
#include "tracedb/store_writer.h"

using namespace causeway;
using namespace causeway::collector;
using causeway::test::TempDir;

namespace {

const std::string kId = "3f1b2c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809";
const std::string kId2 = "aa1b2c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8bb";
const std::string kPod = "1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809";
const std::string kPodUnderscores = "1a2b3c4d_5e6f_7081_92a3_b4c5d6e7f809";

std::string path_of(const std::string& proc_cgroup_text) {
  return process_cgroup_path(parse_proc_cgroup(proc_cgroup_text));
}

uint64_t inode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("/proc/PID/cgroup: v2, v1 and hybrid hosts") {
  SUBCASE("pure v2: the one line") {
    auto m = parse_proc_cgroup("0::/system.slice/backup.service\n");
    REQUIRE(m.v2);
    CHECK(*m.v2 == "/system.slice/backup.service");
    CHECK(m.v1.empty());
    CHECK(process_cgroup_path(m) == "/system.slice/backup.service");
    CHECK(path_of("0::/\n") == "/");  // the root of a pure v2 host is still the answer
  }
  SUBCASE("pure v1: cpu first, then cpuset, then name=systemd; '/' only when all are") {
    const std::string v1 =
        "12:memory:/mem-only\n"
        "11:cpuset:/cs\n"
        "4:cpu,cpuacct:/system.slice/sshd.service\n"
        "1:name=systemd:/system.slice/sshd.service\n";
    auto m = parse_proc_cgroup(v1);
    CHECK(!m.v2);
    CHECK(m.v1.size() == 4);
    CHECK(process_cgroup_path(m) == "/system.slice/sshd.service");
    CHECK(path_of("11:cpuset:/cs\n4:cpu,cpuacct:/\n1:name=systemd:/user.slice\n") == "/cs");
    CHECK(path_of("4:cpu,cpuacct:/\n1:name=systemd:/user.slice/user-1000.slice\n") == "/user.slice/user-1000.slice");
    // "cpu" is a controller of its own, not a prefix of "cpuset" or "cpuacct".
    CHECK(path_of("3:cpuacct:/acct\n2:cpuset:/\n1:name=systemd:/\n") == "/");
    CHECK(path_of("12:memory:/mem-only\n4:cpu,cpuacct:/\n") == "/");
  }
  SUBCASE("hybrid: v2 when the process is placed there, else the v1 path") {
    // This host's own layout: v2 (unified) at the root, memory v1 elsewhere.
    const std::string root_everywhere =
        "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/01151d9b6aa9b952f90a91368459c50c\n1:cpu:/\n0::/\n";
    CHECK(path_of(root_everywhere) == "/");
    // systemd hybrid: the unit is in the unified hierarchy too.
    CHECK(path_of("5:cpu,cpuacct:/system.slice/nginx.service\n1:name=systemd:/system.slice/nginx.service\n"
                  "0::/system.slice/nginx.service\n") == "/system.slice/nginx.service");
    // docker with the cgroupfs driver on a hybrid host: v1 only.
    CHECK(path_of("5:cpu,cpuacct:/docker/" + kId + "\n1:name=systemd:/docker/" + kId + "\n0::/\n") == "/docker/" + kId);
  }
  SUBCASE("malformed lines are skipped, paths keep their colons") {
    auto m = parse_proc_cgroup("garbage\n0::relative\n\n0::/a:b\n");
    REQUIRE(m.v2);
    CHECK(*m.v2 == "/a:b");
    CHECK(path_of("").empty());
  }
}

TEST_CASE("container and pod ids of the runtimes' cgroup layouts") {
  struct Case {
    std::string path, container, pod;
  };
  const Case cases[] = {
      // docker: systemd driver, cgroupfs driver
      {"/system.slice/docker-" + kId + ".scope", kId, ""},
      {"/docker/" + kId, kId, ""},
      // containerd under Kubernetes: systemd driver (underscored pod uid), cgroupfs driver
      {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kPodUnderscores + ".slice/cri-containerd-" +
           kId + ".scope",
       kId, kPod},
      {"/kubepods/burstable/pod" + kPod + "/" + kId, kId, kPod},
      {"/kubepods/pod" + kPod + "/" + kId, kId, kPod},  // guaranteed QoS: no class level
      {"/kubepods.slice/kubepods-pod" + kPodUnderscores + ".slice/cri-containerd-" + kId + ".scope", kId, kPod},
      // cri-o: the container and its conmon monitor
      {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kPodUnderscores + ".slice/crio-" + kId +
           ".scope",
       kId, kPod},
      {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kPodUnderscores + ".slice/crio-conmon-" +
           kId + ".scope",
       kId, kPod},
      // podman
      {"/machine.slice/libpod-" + kId + ".scope", kId, ""},
      // a process in a child cgroup of the container (systemd inside it)
      {"/system.slice/docker-" + kId + ".scope/init.scope", kId, ""},
      // docker in docker: the inner container
      {"/docker/" + kId + "/docker/" + kId2, kId2, ""},
      // a pod's own slice, no container yet
      {"/kubepods/burstable/pod" + kPod, "", kPod},
      // no container
      {"/user.slice/user-1000.slice/session-2.scope", "", ""},
      {"/", "", ""},
      {"", "", ""},
      // 64 hex inside a longer name is not an id; 63 is not one either
      {"/x" + kId, "", ""},
      {"/docker/" + kId.substr(1), "", ""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.path);
    ContainerIdentity id = container_of(c.path);
    CHECK(id.container_id == c.container);
    CHECK(id.pod == c.pod);
  }
}

TEST_CASE("the cgroup2 mount from mountinfo: hybrid, pure v2, none, escaped, bind mounts") {
  const std::string hybrid =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  CHECK(find_cgroup2_mount(hybrid) == "/sys/fs/cgroup/unified");
  CHECK(find_cgroup2_mount("35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
                           "rw,nsdelegate,memory_recursiveprot\n") == "/sys/fs/cgroup");
  CHECK(!find_cgroup2_mount("32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"));
  CHECK(!find_cgroup2_mount(""));
  CHECK(find_cgroup2_mount("50 1 0:38 / /mnt/my\\040cgroups rw - cgroup2 none rw\n") == "/mnt/my cgroups");
  // A part of the hierarchy bind-mounted somewhere comes second to the whole of it.
  CHECK(find_cgroup2_mount("60 1 0:38 /kubepods /var/lib/x rw - cgroup2 none rw\n"
                           "61 1 0:38 / /sys/fs/cgroup rw - cgroup2 none rw\n") == "/sys/fs/cgroup");
  CHECK(find_cgroup2_mount("60 1 0:38 /kubepods /var/lib/x rw - cgroup2 none rw\n") == "/var/lib/x");
}

TEST_CASE("a folder tree scanned by inode: every folder, no files") {
  TempDir dir;
  const std::string root = dir.path();
  std::filesystem::create_directories(root + "/kubepods/burstable/pod" + kPod + "/" + kId);
  std::filesystem::create_directories(root + "/system.slice/a b.service");
  { std::ofstream(root + "/kubepods/cgroup.procs") << "1\n"; }
  auto tree = scan_cgroup_tree(root);
  CHECK(tree.size() == 7);  // root, kubepods, burstable, pod…, <id>, system.slice, "a b.service"
  CHECK(tree.at(inode_of(root)) == "/");
  CHECK(tree.at(inode_of(root + "/kubepods/burstable/pod" + kPod + "/" + kId)) ==
        "/kubepods/burstable/pod" + kPod + "/" + kId);
  CHECK(tree.at(inode_of(root + "/system.slice/a b.service")) == "/system.slice/a b.service");
  CHECK(!tree.count(inode_of(root + "/kubepods/cgroup.procs")));
  CHECK(scan_cgroup_tree(root + "/missing").empty());
}

TEST_CASE("resolver: ids become cgroups rows once; a folder gone before the scan is stored with no path") {
  TempDir dir;
  const std::string root = dir.path() + "/cg";
  const std::string leaf = "/kubepods/burstable/pod" + kPod + "/" + kId;
  std::filesystem::create_directories(root + leaf);
  std::filesystem::create_directories(root + "/gone");
  std::filesystem::create_directories(root + "/later");
  const uint64_t leaf_id = inode_of(root + leaf), gone_id = inode_of(root + "/gone"), later_id = inode_of(root + "/later");
  const uint64_t root_id = inode_of(root);
  // Open folders keep their inodes while removed, so no folder made below can reuse an id
  // (ext4 hands out freed inode numbers again at once).
  const int hold_gone = ::open((root + "/gone").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int hold_later = ::open((root + "/later").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE((hold_gone >= 0 && hold_later >= 0));
  std::filesystem::remove(root + "/later");
  std::filesystem::remove(root + "/gone");

  const std::string db = dir.file("t.db");
  auto w = StoreWriter::open(db);
  REQUIRE(w.ok());
  SessionInfo info;
  info.source_kind = "live";
  info.started_ns = 1;
  auto sid = (*w)->begin_session(info);
  REQUIRE(sid.ok());
  {
    CgroupResolver r(root, **w, std::chrono::milliseconds(50));
    r.note(leaf_id);
    r.note(root_id);
    r.note(gone_id);
    r.note(leaf_id);  // a second sighting costs a set lookup, nothing more
    r.note(0);        // unknown: ignored
    // A folder created after the first scan is found by the next one.
    for (int i = 0; i < 500 && r.resolved() + r.unresolved() < 3; ++i) ::usleep(10'000);
    REQUIRE(r.resolved() + r.unresolved() == 3);
    std::filesystem::create_directories(root + "/later2");
    r.note(inode_of(root + "/later2"));
    r.finish();
    CHECK(r.resolved() == 3);
    CHECK(r.unresolved() == 1);
  }
  {
    // No cgroup2 mount on the host: ids are kept, paths are not invented.
    CgroupResolver none(std::nullopt, **w);
    none.note(later_id);
    none.finish();
    CHECK(none.unresolved() == 1);
  }
  (*w)->flush();
  REQUIRE((*w)->close(2).ok());

  auto h = open_read_only(db);
  REQUIRE(h.ok());
  auto row = [&](uint64_t id) {
    auto st = Statement::prepare(h->get(), "SELECT path, coalesce(container_id, '-'), coalesce(pod, '-') FROM cgroups "
                                           "WHERE cgroup_id = " + std::to_string(id));
    REQUIRE(st.ok());
    REQUIRE(st->step() == SQLITE_ROW);
    return st->col_text(0) + "|" + st->col_text(1) + "|" + st->col_text(2);
  };
  CHECK(row(leaf_id) == leaf + "|" + kId + "|" + kPod);
  CHECK(row(root_id) == "/|-|-");
  CHECK(row(gone_id) == "|-|-");
  CHECK(row(later_id) == "|-|-");
  CHECK(row(inode_of(root + "/later2")) == "/later2|-|-");
  CHECK(query_int(h->get(), "SELECT count(*) FROM cgroups")->value_or(-1) == 5);
  ::close(hold_gone);
  ::close(hold_later);
}
