// Planted incidents whose culprit lives outside the traced job, under real eBPF:
//   tenant     a CPU hog in another tenant's container cgroup (<cgroup2>/kubepods/burstable/
//              pod<uid>/<64 hex>, untraced, nice -10) pinned to the workload's CPU: the
//              cpu_contention chain names the hog *and* its cgroup, container and pod
//   network    an NCCL rank whose fake libnccl moves each collective's data over TCP to a peer
//              on [::1] (its socket transport), in a network namespace whose input path drops
//              6% of the packets to the peer: the slow collectives are claimed by `network`,
//              with the peer [::1]:port and retransmits attributed to the rank's own socket
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "collector/cgroup_paths.h"
#include "tests/bpf/diagnosis_live_support.h"
#include "tests/bpf/netns_support.h"
#include "tests/bpf/pod_cgroup.h"

namespace causeway::test {
namespace {

constexpr int kPeerPort = 5202;

// Kills a process (and reaps it) when the test leaves.
struct Killer {
  pid_t pid;
  ~Killer() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      wait_exit(pid);
    }
  }
};

}  // namespace

TEST_CASE("tenant: a CPU hog in another container's cgroup is named with its cgroup, container and pod") {
  const auto& mount = collector::cgroup2_mount();
  REQUIRE_MESSAGE(mount.has_value(), "no cgroup2 mount (/proc/self/mountinfo)");
  PodCgroup cg(*mount);
  TempDir dir;
  const std::string ready = dir.file("w.ready"), go = dir.file("w.go");
  // The workload: CPU-bound 100 µs calls pinned to CPU 0, traced alone (--pid).
  const pid_t w = spawn(workload({"--pin-cpu", "0", "--rate", "0", "--iterations", "10000", "--latency-us", "100", "--ops",
                                  "stream_sync", "--ready-file", ready, "--wait-file", go}),
                        dir.file("w.log"));
  Killer wk{w};
  wait_for_file(ready);
  Tracer t(dir, {"--pid", S(w), "--lib", testprog("libcudart.so.13")});
  { std::ofstream(go.c_str()) << "go"; }
  sleep_ms(100);
  // The other tenant's hog: untraced, in its own container, 1.5 s of CPU on the workload's CPU.
  const pid_t hog = spawn_hog(cg, 0, 1500, "tenant_b_hog", -10);
  Killer hk{hog};
  REQUIRE(wait_exit(w) == 0);
  wk.pid = -1;
  REQUIRE(wait_exit(hog) == 0);
  hk.pid = -1;
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  json chains = chains_of(t.db());
  INFO(brief(t.db(), chains));
  const json c = find_chain(chains, w, "cpu_contention");
  REQUIRE(c.is_object());
  check_strong(c);
  const json& k = c["culprit"];
  CHECK(k.value("pid", 0) == hog);
  CHECK(k.value("comm", "") == "tenant_b_hog");
  CHECK(k.value("cgroup", "") == cg.rel());
  CHECK(k.value("container", "") == cg.container());
  CHECK(k.value("pod", "") == cg.pod());
  CHECK(c.value("summary", "").find("tenant_b_hog (pid " + S(hog) + ") in " + cg.rel()) != std::string::npos);
}

TEST_CASE("network: retransmits on the rank's own IPv6 socket stretch its collectives; the peer is named") {
  const std::string nft = nft_path();
  REQUIRE_MESSAGE(!nft.empty(), "nft is installed by scripts/install-deps.sh --tests");
  TempDir dir;
  const std::string ready = dir.file("w.ready"), go = dir.file("w.go"), peer_ready = dir.file("peer.ready");
  // In a lossy namespace: the peer (cw_tcp --serve, untraced), then the rank (cw_workload with
  // one NCCL rank in this process, exec'd so its pid is the one traced).
  const pid_t w = ::fork();
  if (w == 0) {
    enter_lossy_netns(nft, dir.file("drop.nft"), kPeerPort, 6);
    const pid_t peer = spawn({testprog("cw_tcp"), "--serve", "--family", "6", "--port", S(kPeerPort), "--ready-file",
                              peer_ready},
                             dir.file("peer.log"));
    if (peer < 0) ::_exit(5);
    wait_for_file(peer_ready);
    ::setenv("CW_FAKE_NCCL_SOCKET", ("[::1]:" + S(kPeerPort)).c_str(), 1);
    ::setenv("CW_FAKE_NCCL_SOCKET_BYTES", "131072", 1);
    const std::string log = dir.file("w.log");
    if (FILE* f = std::freopen(log.c_str(), "w", stdout)) ::dup2(::fileno(f), 2);
    const std::vector<std::string> argv = workload({"--ops", "", "--nccl-ops", "allreduce", "--iterations", "400",
                                                    "--ready-file", ready, "--wait-file", go});
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  Killer wk{w};
  wait_for_file(ready);
  struct PeerKiller {
    std::string file;
    ~PeerKiller() {
      const std::string p = read_file(file);
      if (!p.empty()) ::kill(std::stoi(p), SIGKILL);
    }
  } pk{peer_ready};
  Tracer t(dir, {"--pid", S(w), "--lib", testprog("libnccl.so.2")});
  const auto t0 = std::chrono::steady_clock::now();
  { std::ofstream(go.c_str()) << "go"; }
  const int rc = wait_exit(w);
  wk.pid = -1;
  INFO(read_file(dir.file("w.log")));
  REQUIRE(rc == 0);
  MESSAGE("network case: workload ran " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  sleep_ms(300);
  REQUIRE(t.stop(SIGINT) == 0);
  const std::string db = t.db();
  // The rank's retransmits were recorded as its own (the kernel sent them from timers).
  const int64_t own = q_int(db, "SELECT count(*) FROM v_tcp_retransmits WHERE pid = " + S(w) + " AND sock_owner = 1");
  REQUIRE(own > 0);
  json chains = chains_of(db);
  INFO(brief(db, chains));
  const json c = find_chain(chains, w, "network");
  REQUIRE(c.is_object());
  check_strong(c);
  CHECK(c.value("op", "") == "ncclAllReduce");
  CHECK(c["culprit"].value("peer", "") == "[::1]:" + S(kPeerPort));
  CHECK(c["culprit"].value("retransmits", 0) > 0);
  CHECK(c.value("summary", "").find("[::1]:" + S(kPeerPort)) != std::string::npos);
}

}  // namespace causeway::test
