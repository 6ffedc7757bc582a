// Multi-uprobe links (kernel 6.6+): one BPF link attaches a program at many offsets of one
// file and one close detaches them all, with a single synchronization for the whole set
// instead of one per probe; session uprobes (6.13+) are the same link with one program for
// entry and return. Debian 12's libbpf (1.1) predates the wrappers, so the link is made with
// the bpf() syscall directly (BPF_LINK_CREATE, attach type BPF_TRACE_UPROBE_MULTI or
// BPF_TRACE_UPROBE_SESSION; attribute layout from the kernel's include/uapi/linux/bpf.h,
// docs/COLLECTOR.md "Uprobe links").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway::collector {

// How uprobes are attached on this kernel, best first: one session link per library (6.13+:
// one program runs at the entry and, when the entry asks for it, at the return), one multi
// link per (library, program) (6.6+), or one perf-event link per probe and program.
enum class UprobeLinkKind { session, multi, perf_event };
const char* link_kind_name(UprobeLinkKind k);

// The attach types a program must be loaded with to be used in such a link.
constexpr uint32_t kAttachUprobeMulti = 48;    // BPF_TRACE_UPROBE_MULTI
constexpr uint32_t kAttachUprobeSession = 57;  // BPF_TRACE_UPROBE_SESSION

// The best kind this kernel makes: for each multi attach type, a minimal program of that type
// is loaded and a link asked for on "/" (not a regular file), which a kernel that knows the
// attach type refuses with EBADF (libbpf's own feature probe does the same).
// CAUSEWAY_UPROBE_LINKS=perf|multi|session asks for a kind (tests, and a way out if a kernel
// misbehaves); one the kernel lacks falls back to the next.
UprobeLinkKind detect_uprobe_link_kind();

// What a multi link's program is for: the entries, the returns, or both (a session).
enum class ProbeSide { entry, ret, session };

struct UprobeSite {
  uint64_t offset = 0;  // file offset of the probed instruction
  uint64_t cookie = 0;  // bpf_get_attach_cookie() in the program
};

// One link attaching `prog_fd` at every site of `path`; returns the link's fd (the caller owns
// it: closing it detaches every site at once). The program was loaded with the attach type of
// `side` (kAttachUprobeSession for a session, else kAttachUprobeMulti).
// pid > 0: the kernel writes the breakpoints into that process's memory only (its other
// processes never trap) and runs the program for that process's threads only.
Result<int> attach_uprobe_multi(int prog_fd, const std::string& path, const std::vector<UprobeSite>& sites,
                                ProbeSide side, uint32_t pid = 0);

}  // namespace causeway::collector
