#include "collector/sock_hook.h"

#include <unistd.h>

#include <cstdlib>

namespace causeway::collector {

const char* sock_hook_name(SockHook h) {
  return h == SockHook::syscalls ? "syscall tracepoints (syscalls:sys_enter_*/sys_exit_* of the socket syscalls only)"
                                 : "raw tracepoints sys_enter/sys_exit (every syscall on the host runs the filter)";
}

const std::vector<std::string>& sock_syscalls() {
  // The syscalls bpf/sock.bpf.h switches on (CW_NR_*).
  static const std::vector<std::string> names = {"accept", "accept4", "read",    "write",   "readv",  "writev",
                                                 "recvfrom", "sendto", "recvmsg", "sendmsg", "close"};
  return names;
}

std::string syscall_tracepoints_dir() {
  // libbpf 1.1 (tracefs_path): the debugfs mount when /sys/kernel/debug/tracing exists.
  const std::string root = ::access("/sys/kernel/debug/tracing", F_OK) == 0 ? "/sys/kernel/debug/tracing"
                                                                              : "/sys/kernel/tracing";
  const std::string dir = root + "/events/syscalls";
  return ::access((dir + "/sys_enter_read/id").c_str(), R_OK) == 0 ? dir : std::string();
}

Result<SockHookChoice> choose_sock_hook() {
  const char* asked = std::getenv("CAUSEWAY_SOCK_HOOK");
  const std::string want = asked ? asked : "";
  SockHookChoice c;
  if (want == "raw" || want == "syscalls") {
    c.hook = want == "raw" ? SockHook::raw : SockHook::syscalls;
    c.forced = true;
    return c;
  }
  if (!want.empty()) return make_error("usage", "CAUSEWAY_SOCK_HOOK=" + want + ": expected raw or syscalls");
  if (!syscall_tracepoints_dir().empty()) {
    c.hook = SockHook::syscalls;
    return c;
  }
  c.why_raw = "no syscalls:sys_enter_read tracepoint in tracefs (kernel without CONFIG_FTRACE_SYSCALLS, or tracefs "
              "not mounted: mount -t tracefs nodev /sys/kernel/tracing)";
  return c;
}

}  // namespace causeway::collector
