// Which kernel hook runs the socket-syscall programs of request tracing (bpf/sock.bpf.h,
// docs/INFERENCE.md "Which syscall hook"): the per-syscall tracepoints of the socket syscalls
// only, or the raw sys_enter / sys_exit tracepoints that every syscall on the host runs.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace causeway::collector {

enum class SockHook { syscalls, raw };
const char* sock_hook_name(SockHook h);

// The syscalls whose syscalls:sys_enter_<name> and sys_exit_<name> tracepoints the syscall
// hook attaches to (close: its entry only, where the record is emitted).
const std::vector<std::string>& sock_syscalls();

// What to try: CAUSEWAY_SOCK_HOOK=raw|syscalls forces a hook (benchmarks, tests, and a way
// out if a kernel misbehaves); unset, the syscall tracepoints when tracefs shows them, else raw
// with the reason in `why_raw`. An unknown value is an error.
struct SockHookChoice {
  SockHook hook = SockHook::raw;
  bool forced = false;
  std::string why_raw;  // the fallback's reason; empty when chosen or forced
};
Result<SockHookChoice> choose_sock_hook();

// The events/syscalls folder libbpf reads tracepoint ids from (/sys/kernel/debug/tracing
// when that exists, else /sys/kernel/tracing, as libbpf 1.1 decides), when it lists
// sys_enter_read; empty when not (CONFIG_FTRACE_SYSCALLS off, or tracefs not mounted).
std::string syscall_tracepoints_dir();

}  // namespace causeway::collector
