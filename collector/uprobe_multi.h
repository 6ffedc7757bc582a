// Multi-uprobe links (kernel 6.6+): one BPF link attaches a program at many offsets of one
// file and one close detaches them all, with a single synchronization for the whole set
// instead of one per probe. Debian 12's libbpf (1.1) predates the wrapper, so the link is
// made with the bpf() syscall directly (BPF_LINK_CREATE, attach type BPF_TRACE_UPROBE_MULTI;
// attribute layout from the kernel's include/uapi/linux/bpf.h, docs/COLLECTOR.md "Uprobe links").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway::collector {

// How uprobes are attached on this kernel: one link per (library, program) or one perf-event
// link per probe (the fallback on kernels before 6.6).
enum class UprobeLinkKind { multi, perf_event };
const char* link_kind_name(UprobeLinkKind k);

// The attach type a program must be loaded with to be used in a multi link.
constexpr uint32_t kAttachUprobeMulti = 48;  // BPF_TRACE_UPROBE_MULTI

// Whether this kernel makes multi-uprobe links: a minimal program of that attach type is
// loaded and a link asked for on "/" (not a regular file), which a kernel that knows the
// attach type refuses with EBADF (libbpf's own feature probe does the same).
// CAUSEWAY_UPROBE_LINKS=perf forces the fallback (tests, and a way out if a kernel misbehaves).
UprobeLinkKind detect_uprobe_link_kind();

struct UprobeSite {
  uint64_t offset = 0;  // file offset of the probed instruction
  uint64_t cookie = 0;  // bpf_get_attach_cookie() in the program
};

// One link attaching `prog_fd` at every site of `path`; returns the link's fd (the caller owns
// it: closing it detaches every site at once).
Result<int> attach_uprobe_multi(int prog_fd, const std::string& path, const std::vector<UprobeSite>& sites,
                                bool retprobe);

}  // namespace causeway::collector
