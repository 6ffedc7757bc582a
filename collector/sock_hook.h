// Which kernel hook runs the socket programs of request tracing for each server (bpf/sock.bpf.h,
// docs/INFERENCE.md "Which hook"): uprobes on the server's own libc socket functions attached
// with its pid (no other process pays anything) where a uprobe trap is cheap, else the
// per-syscall tracepoints of the socket syscalls (every process's socket syscalls run the
// server filter), or the raw sys_enter / sys_exit tracepoints that every syscall on the host
// runs, where tracefs lacks those. A server without a dynamically linked libc (a static Go
// binary) always gets a tracepoint hook.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collector/proc_maps.h"
#include "collector/uprobe_multi.h"
#include "common/result.h"

namespace causeway::collector {

enum class SockHook { libc, syscalls, raw };
const char* sock_hook_name(SockHook h);

// The syscalls whose syscalls:sys_enter_<name> and sys_exit_<name> tracepoints the syscall
// hook attaches to (close: its entry only, where the record is emitted).
const std::vector<std::string>& sock_syscalls();

// A served request traps about 12 times on the libc hook (docs/BENCHMARKS.md "The libc
// hook"): at 1 us a trap that is 12 us, under 5% of a 0.25 ms request, and the hook spares
// every other process. Where a trap costs more (5-7 us on the 2-vCPU PVM VM, where the libc
// hook raised a small request's served p50 1.5-2.3x) the tracepoints cost the server less.
constexpr double kLibcTrapBudgetNs = 1000;

// What to try. Unset: the libc hook for each server that maps a libc when `trap_ns()` (called
// only then) says a trap costs at most kLibcTrapBudgetNs, and the tracepoint hook for the
// others — the syscall tracepoints when tracefs shows them, else raw with the reason in
// `why_raw`. CAUSEWAY_SOCK_HOOK=libc asks for the libc hook whatever a trap costs;
// =syscalls|raw forces that tracepoint hook for every server (benchmarks, tests, and a way out
// if a kernel misbehaves). An unknown value is an error.
struct SockHookChoice {
  bool libc = false;                    // servers with a dynamic libc get the libc hook
  SockHook tracepoint = SockHook::raw;  // the others (every server when !libc): syscalls or raw
  bool forced = false;
  std::optional<double> trap_ns;  // measured: what a uprobe trap costs a process here
  std::string why;                // the reason for libc or not, for the user (check, the trace's log)
  std::string why_raw;            // the fallback's reason; empty when chosen or forced
};
Result<SockHookChoice> choose_sock_hook(const std::function<Result<double>()>& trap_ns);

// The events/syscalls folder libbpf reads tracepoint ids from (/sys/kernel/debug/tracing
// when that exists, else /sys/kernel/tracing, as libbpf 1.1 decides), when it lists
// sys_enter_read; empty when not (CONFIG_FTRACE_SYSCALLS off, or tracefs not mounted).
std::string syscall_tracepoints_dir();

// The C library a process maps (glibc's libc.so.6, musl's ld-musl-*.so.1 or libc.musl-*),
// as its path in the process's mount namespace; empty for a process without one (static).
std::string mapped_libc(const std::vector<Mapping>& maps);

// Where the libc hook probes one libc file: an entry site per socket function found (cookie:
// the syscall it makes, as bpf/sock.bpf.h cw_sock_libc_enter reads it) and a return site for
// those whose return makes the record (all but close and syscall()). One site per address
// (aliases share one). An error when read, write and accept4 are not all there.
struct LibcSockSites {
  std::vector<UprobeSite> entries;
  std::vector<UprobeSite> returns;
  std::vector<std::string> functions;  // the names probed, for messages
};
Result<LibcSockSites> libc_sock_sites(const std::string& path);

}  // namespace causeway::collector
