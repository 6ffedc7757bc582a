#include "collector/uprobe_multi.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace causeway::collector {
namespace {

constexpr uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

// union bpf_attr's link_create member as kernels 6.6+ lay it out (the header this builds with
// may be older). The kernel reads `size` bytes and requires any it does not know to be zero.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;             // const char*
  uint64_t offsets;          // const unsigned long*
  uint64_t ref_ctr_offsets;  // const unsigned long*, may be 0
  uint64_t cookies;          // const __u64*, may be 0
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;              // 0: every process
  uint32_t pad;
};
static_assert(offsetof(LinkCreateUprobeMulti, path) == 16);
static_assert(offsetof(LinkCreateUprobeMulti, cnt) == 48);
static_assert(offsetof(LinkCreateUprobeMulti, pid) == 56);

int link_create(const LinkCreateUprobeMulti& a) {
  return static_cast<int>(::syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a)));
}

}  // namespace

const char* link_kind_name(UprobeLinkKind k) {
  return k == UprobeLinkKind::multi ? "multi-uprobe links (one per library and program)"
                                    : "perf-event uprobes (one link per probe)";
}

UprobeLinkKind detect_uprobe_link_kind() {
  if (const char* force = std::getenv("CAUSEWAY_UPROBE_LINKS"); force && std::strcmp(force, "perf") == 0)
    return UprobeLinkKind::perf_event;
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = static_cast<bpf_attach_type>(kAttachUprobeMulti));
  const int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", insns, 2, &opts);
  if (prog < 0) return UprobeLinkKind::perf_event;
  const char* path = "/";
  unsigned long offset = 0;
  LinkCreateUprobeMulti a{};
  a.prog_fd = static_cast<uint32_t>(prog);
  a.attach_type = kAttachUprobeMulti;
  a.path = reinterpret_cast<uintptr_t>(path);
  a.offsets = reinterpret_cast<uintptr_t>(&offset);
  a.cnt = 1;
  const int link = link_create(a);
  const int err = errno;
  if (link >= 0) ::close(link);
  ::close(prog);
  return link < 0 && err == EBADF ? UprobeLinkKind::multi : UprobeLinkKind::perf_event;
}

Result<int> attach_uprobe_multi(int prog_fd, const std::string& path, const std::vector<UprobeSite>& sites,
                                bool retprobe) {
  if (sites.empty()) return make_error("attach", "no probe sites in " + path);
  std::vector<unsigned long> offsets;
  std::vector<uint64_t> cookies;
  offsets.reserve(sites.size());
  cookies.reserve(sites.size());
  for (const UprobeSite& s : sites) {
    offsets.push_back(static_cast<unsigned long>(s.offset));
    cookies.push_back(s.cookie);
  }
  LinkCreateUprobeMulti a{};
  a.prog_fd = static_cast<uint32_t>(prog_fd);
  a.attach_type = kAttachUprobeMulti;
  a.path = reinterpret_cast<uintptr_t>(path.c_str());
  a.offsets = reinterpret_cast<uintptr_t>(offsets.data());
  a.cookies = reinterpret_cast<uintptr_t>(cookies.data());
  a.cnt = static_cast<uint32_t>(sites.size());
  a.multi_flags = retprobe ? kUprobeMultiReturn : 0;
  const int fd = link_create(a);
  if (fd < 0)
    return make_error("attach", std::string(retprobe ? "uretprobe" : "uprobe") + " multi-link on " + path + " (" +
                                    std::to_string(sites.size()) + " sites): " + std::strerror(errno));
  return fd;
}

}  // namespace causeway::collector
