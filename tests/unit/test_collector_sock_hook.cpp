// Which hook request tracing asks for (collector/sock_hook.h): CAUSEWAY_SOCK_HOOK parsed, the
// automatic choice following a trap's cost and what tracefs lists on this host (checked here
// on its own), the
// libc a process maps, and where the libc hook probes it (checked against this process's own).
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <optional>
#include <set>
#include <string>

#include "collector/sock_hook.h"

using namespace causeway::collector;

namespace {

// Sets CAUSEWAY_SOCK_HOOK for one scope (unset when value is null), restoring what was there.
struct HookEnv {
  std::string old;
  bool had;
  explicit HookEnv(const char* value) {
    const char* o = std::getenv("CAUSEWAY_SOCK_HOOK");
    had = o != nullptr;
    if (had) old = o;
    if (value) ::setenv("CAUSEWAY_SOCK_HOOK", value, 1);
    else ::unsetenv("CAUSEWAY_SOCK_HOOK");
  }
  ~HookEnv() {
    if (had) ::setenv("CAUSEWAY_SOCK_HOOK", old.c_str(), 1);
    else ::unsetenv("CAUSEWAY_SOCK_HOOK");
  }
};

// A trap timing that must not be asked for (a forced hook measures nothing).
causeway::Result<double> not_timed() {
  FAIL("the trap was timed although the hook was forced");
  return 0.0;
}

}  // namespace

TEST_CASE("CAUSEWAY_SOCK_HOOK forces a hook; an unknown value is an error naming the choices") {
  {
    HookEnv e("raw");
    auto c = choose_sock_hook(not_timed);
    REQUIRE(c);
    CHECK_FALSE(c->libc);
    CHECK(c->tracepoint == SockHook::raw);
    CHECK(c->forced);
  }
  {
    HookEnv e("syscalls");
    auto c = choose_sock_hook(not_timed);
    REQUIRE(c);
    CHECK_FALSE(c->libc);
    CHECK(c->tracepoint == SockHook::syscalls);
    CHECK(c->forced);
  }
  {
    // libc: the libc hook where a server maps one; the others still on a tracepoint hook,
    // chosen as when unset.
    HookEnv e("libc");
    auto c = choose_sock_hook(not_timed);
    REQUIRE(c);
    CHECK(c->libc);
    CHECK_FALSE(c->forced);
    CHECK(c->tracepoint == (syscall_tracepoints_dir().empty() ? SockHook::raw : SockHook::syscalls));
  }
  {
    HookEnv e("kprobe");
    auto c = choose_sock_hook(not_timed);
    REQUIRE(!c);
    CHECK(c.error().message == "CAUSEWAY_SOCK_HOOK=kprobe: expected libc, syscalls or raw");
  }
}

TEST_CASE("unset: the libc hook where a trap costs at most 1 us, else the tracepoints (syscalls when tracefs lists them, else raw)") {
  HookEnv e(nullptr);
  bool listed = false;
  for (const char* root : {"/sys/kernel/debug/tracing", "/sys/kernel/tracing"})
    if (::access(root, F_OK) == 0) {
      listed = ::access((std::string(root) + "/events/syscalls/sys_enter_read/id").c_str(), R_OK) == 0;
      break;
    }
  MESSAGE("syscall tracepoints readable here: " << (listed ? "yes" : "no"));
  CHECK(syscall_tracepoints_dir().empty() == !listed);
  const SockHook tracepoint = listed ? SockHook::syscalls : SockHook::raw;
  SUBCASE("a trap dearer than the budget: the tracepoints, and why") {
    auto c = choose_sock_hook([] { return causeway::Result<double>(kLibcTrapBudgetNs + 1); });
    REQUIRE(c);
    CHECK_FALSE(c->forced);
    CHECK_FALSE(c->libc);
    CHECK(c->trap_ns == kLibcTrapBudgetNs + 1);
    CHECK(c->why == "a uprobe trap costs 1.00 us here, above the libc hook's budget of 1 us");
    CHECK(c->tracepoint == tracepoint);
    CHECK(c->why_raw.empty() == listed);
  }
  SUBCASE("a trap within the budget: the libc hook, the tracepoints for servers without a libc") {
    auto c = choose_sock_hook([] { return causeway::Result<double>(350.0); });
    REQUIRE(c);
    CHECK(c->libc);
    CHECK(c->why == "a uprobe trap costs 0.35 us here, within the libc hook's budget of 1 us");
    CHECK(c->tracepoint == tracepoint);
  }
  SUBCASE("a trap that cannot be timed: the tracepoints, with the reason") {
    auto c = choose_sock_hook([] { return causeway::Result<double>(causeway::make_error("attach", "no uprobes")); });
    REQUIRE(c);
    CHECK_FALSE(c->libc);
    CHECK_FALSE(c->trap_ns.has_value());
    CHECK(c->why == "a uprobe trap could not be timed (no uprobes)");
  }
}

TEST_CASE("the syscalls attached are the ones bpf/sock.bpf.h switches on") {
  const auto& names = sock_syscalls();
  CHECK(names == std::vector<std::string>{"accept", "accept4", "read", "write", "readv", "writev", "recvfrom", "sendto",
                                          "recvmsg", "sendmsg", "close"});
  CHECK(std::string(sock_hook_name(SockHook::libc)).find("libc uprobes") == 0);
  CHECK(std::string(sock_hook_name(SockHook::syscalls)).find("syscall tracepoints") == 0);
  CHECK(std::string(sock_hook_name(SockHook::raw)).find("raw tracepoints") == 0);
}

TEST_CASE("the libc a process maps: glibc, musl, none for a static binary; a deleted one is not probed") {
  const std::string head = "55d0c0a00000-55d0c0a01000 r-xp 00001000 08:01 1234 /usr/bin/server\n";
  auto maps = [&](const std::string& lib) {
    return parse_maps(head + "7f0000000000-7f0000100000 r--p 00000000 08:01 99 " + lib + "\n" +
                      "7f0000100000-7f0000200000 r-xp 00100000 08:01 99 " + lib + "\n");
  };
  CHECK(mapped_libc(maps("/usr/lib/x86_64-linux-gnu/libc.so.6")) == "/usr/lib/x86_64-linux-gnu/libc.so.6");
  CHECK(mapped_libc(maps("/lib/ld-musl-x86_64.so.1")) == "/lib/ld-musl-x86_64.so.1");
  CHECK(mapped_libc(maps("/lib/libc-2.17.so")) == "/lib/libc-2.17.so");
  CHECK(mapped_libc(maps("/usr/lib/x86_64-linux-gnu/libcudart.so.13")).empty());
  CHECK(mapped_libc(maps("/usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)")).empty());
  CHECK(mapped_libc(parse_maps(head)).empty());  // static: itself only
}

TEST_CASE("libc sites: this process's own libc, each probed at the address its functions run from") {
  const std::vector<Mapping> self = read_maps(static_cast<uint32_t>(::getpid()));
  const std::string libc = mapped_libc(self);
  REQUIRE_MESSAGE(!libc.empty(), "this test runs dynamically linked against a libc");
  auto sites = libc_sock_sites(libc);
  REQUIRE_MESSAGE(sites, sites.error().message);
  // Each entry site is where the function is in this process (its file offset), with the
  // syscall it makes as cookie; a return site for all but close and syscall().
  struct Want {
    const char* name;
    uint64_t nr;
    bool ret;
  };
  for (const Want& w : {Want{"read", SYS_read, true}, Want{"write", SYS_write, true}, Want{"accept4", SYS_accept4, true},
                        Want{"recv", SYS_recvfrom, true}, Want{"send", SYS_sendto, true}, Want{"close", SYS_close, false}}) {
    CAPTURE(w.name);
    void* addr = ::dlsym(RTLD_DEFAULT, w.name);
    REQUIRE(addr != nullptr);
    const Mapping* m = find_mapping(self, reinterpret_cast<uint64_t>(addr));
    REQUIRE(m != nullptr);
    const uint64_t off = reinterpret_cast<uint64_t>(addr) - m->start + m->offset;
    auto at = [&](const std::vector<UprobeSite>& v) {
      for (const UprobeSite& s : v)
        if (s.offset == off) return std::optional<uint64_t>(s.cookie);
      return std::optional<uint64_t>();
    };
    REQUIRE(at(sites->entries).has_value());
    CHECK(*at(sites->entries) == w.nr);
    CHECK(at(sites->returns).has_value() == w.ret);
  }
  // One site per address.
  std::set<uint64_t> offsets;
  for (const UprobeSite& s : sites->entries) CHECK(offsets.insert(s.offset).second);
  CHECK(sites->returns.size() < sites->entries.size());
}

TEST_CASE("libc sites: a file that is not a C library is refused with its path") {
  auto sites = libc_sock_sites("/proc/self/exe");
  REQUIRE_FALSE(sites);
  CHECK(sites.error().message.find("/proc/self/exe has no read()") != std::string::npos);
}
