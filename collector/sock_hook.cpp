#include "collector/sock_hook.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "collector/elf_file.h"

namespace causeway::collector {

const char* sock_hook_name(SockHook h) {
  switch (h) {
    case SockHook::libc:
      return "libc uprobes (the server's own socket functions, attached with its pid: no other process traps)";
    case SockHook::syscalls:
      return "syscall tracepoints (syscalls:sys_enter_*/sys_exit_* of the socket syscalls only)";
    case SockHook::raw:
      break;
  }
  return "raw tracepoints sys_enter/sys_exit (every syscall on the host runs the filter)";
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

Result<SockHookChoice> choose_sock_hook(const std::function<Result<double>()>& trap_ns) {
  const char* asked = std::getenv("CAUSEWAY_SOCK_HOOK");
  const std::string want = asked ? asked : "";
  if (!want.empty() && want != "libc" && want != "syscalls" && want != "raw")
    return make_error("usage", "CAUSEWAY_SOCK_HOOK=" + want + ": expected libc, syscalls or raw");
  SockHookChoice c;
  c.forced = want == "syscalls" || want == "raw";
  if (c.forced) {
    c.tracepoint = want == "raw" ? SockHook::raw : SockHook::syscalls;
    c.why = "CAUSEWAY_SOCK_HOOK=" + want;
    return c;
  }
  if (want == "libc") {
    c.libc = true;
    c.why = "CAUSEWAY_SOCK_HOOK=libc";
  } else if (auto t = trap_ns(); !t) {
    c.why = "a uprobe trap could not be timed (" + t.error().message + ")";
  } else {
    c.trap_ns = *t;
    c.libc = *t <= kLibcTrapBudgetNs;
    char us[32];
    std::snprintf(us, sizeof(us), "%.2f", *t / 1000);
    c.why = std::string("a uprobe trap costs ") + us + " us here, " + (c.libc ? "within" : "above") +
            " the libc hook's budget of " + std::to_string(static_cast<int>(kLibcTrapBudgetNs / 1000)) + " us";
  }
  if (!syscall_tracepoints_dir().empty()) {
    c.tracepoint = SockHook::syscalls;
    return c;
  }
  c.why_raw = "no syscalls:sys_enter_read tracepoint in tracefs (kernel without CONFIG_FTRACE_SYSCALLS, or tracefs "
              "not mounted: mount -t tracefs nodev /sys/kernel/tracing)";
  return c;
}

std::string mapped_libc(const std::vector<Mapping>& maps) {
  for (const Mapping& m : maps) {
    // A libc deleted under the process (upgraded in place) has no path left to probe.
    if (!m.exec || m.path.empty() || m.path[0] != '/' || m.path.ends_with(" (deleted)")) continue;
    const std::string_view name = base_name(m.path);
    if (name == "libc.so.6" || name.starts_with("ld-musl-") || name.starts_with("libc.musl-") ||
        (name.starts_with("libc-") && name.ends_with(".so")))
      return m.path;
  }
  return {};
}

namespace {

// Each function and the syscall it makes (bpf/sock.bpf.h CW_NR_*, the kernel's numbers, which
// <sys/syscall.h> has too). What servers call: CPython's socket module recv/send/recvfrom/
// sendmsg/accept4 and os.read/os.write; asyncio the same; libuv (uvloop) read/write/writev/
// accept4 and syscall(SYS_close); Rust std and mio recv/send/writev/accept4/close. The
// _FORTIFY_SOURCE variants run their plain function (a nested entry on the same fd records once).
constexpr uint64_t kLibcSyscall = 0xffff;  // bpf/sock.bpf.h CW_LIBC_SYSCALL
struct LibcFn {
  const char* name;
  uint64_t nr;
};
constexpr LibcFn kFunctions[] = {
    {"accept", SYS_accept},     {"accept4", SYS_accept4},  {"read", SYS_read},
    {"__read_chk", SYS_read},   {"write", SYS_write},      {"readv", SYS_readv},
    {"writev", SYS_writev},     {"recv", SYS_recvfrom},    {"__recv_chk", SYS_recvfrom},
    {"recvfrom", SYS_recvfrom}, {"__recvfrom_chk", SYS_recvfrom}, {"send", SYS_sendto},
    {"sendto", SYS_sendto},     {"recvmsg", SYS_recvmsg},  {"sendmsg", SYS_sendmsg},
    {"close", SYS_close},       {"syscall", kLibcSyscall},
};

}  // namespace

Result<LibcSockSites> libc_sock_sites(const std::string& path) {
  auto elf = ElfFile::load(path);
  if (!elf) return elf.error();
  LibcSockSites out;
  std::set<uint64_t> seen;
  std::set<std::string> found;
  for (const LibcFn& f : kFunctions) {
    auto sym = (*elf)->find(f.name);
    if (!sym) continue;
    auto off = (*elf)->vaddr_to_offset(sym->vaddr);
    if (!off || !seen.insert(*off).second) continue;
    out.entries.push_back(UprobeSite{*off, f.nr});
    if (f.nr != SYS_close && f.nr != kLibcSyscall) out.returns.push_back(UprobeSite{*off, f.nr});
    out.functions.emplace_back(f.name);
    found.insert(f.name);
  }
  for (const char* need : {"read", "write", "accept4"})
    if (!found.count(need))
      return make_error("libc", path + " has no " + need + "(): not a C library the libc hook knows");
  return out;
}

}  // namespace causeway::collector
