// Which hook request tracing asks for (collector/sock_hook.h): CAUSEWAY_SOCK_HOOK parsed, and
// the automatic choice following what tracefs lists on this host (checked here on its own).
#include <doctest/doctest.h>

#include <stdlib.h>
#include <unistd.h>

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

}  // namespace

TEST_CASE("CAUSEWAY_SOCK_HOOK forces a hook; an unknown value is an error naming the choices") {
  {
    HookEnv e("raw");
    auto c = choose_sock_hook();
    REQUIRE(c);
    CHECK(c->hook == SockHook::raw);
    CHECK(c->forced);
  }
  {
    HookEnv e("syscalls");
    auto c = choose_sock_hook();
    REQUIRE(c);
    CHECK(c->hook == SockHook::syscalls);
    CHECK(c->forced);
  }
  {
    HookEnv e("kprobe");
    auto c = choose_sock_hook();
    REQUIRE(!c);
    CHECK(c.error().message == "CAUSEWAY_SOCK_HOOK=kprobe: expected raw or syscalls");
  }
}

TEST_CASE("unset: the syscall tracepoints when tracefs lists them, else raw with the reason") {
  HookEnv e(nullptr);
  bool listed = false;
  for (const char* root : {"/sys/kernel/debug/tracing", "/sys/kernel/tracing"})
    if (::access(root, F_OK) == 0) {
      listed = ::access((std::string(root) + "/events/syscalls/sys_enter_read/id").c_str(), R_OK) == 0;
      break;
    }
  MESSAGE("syscall tracepoints readable here: " << (listed ? "yes" : "no"));
  auto c = choose_sock_hook();
  REQUIRE(c);
  CHECK_FALSE(c->forced);
  CHECK(c->hook == (listed ? SockHook::syscalls : SockHook::raw));
  CHECK(c->why_raw.empty() == listed);
  CHECK(syscall_tracepoints_dir().empty() == !listed);
}

TEST_CASE("the syscalls attached are the ones bpf/sock.bpf.h switches on") {
  const auto& names = sock_syscalls();
  CHECK(names == std::vector<std::string>{"accept", "accept4", "read", "write", "readv", "writev", "recvfrom", "sendto",
                                          "recvmsg", "sendmsg", "close"});
  CHECK(std::string(sock_hook_name(SockHook::syscalls)).find("syscall tracepoints") == 0);
  CHECK(std::string(sock_hook_name(SockHook::raw)).find("raw tracepoints") == 0);
}
