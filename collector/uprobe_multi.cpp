#include "collector/uprobe_multi.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/unique_fd.h"

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
  switch (k) {
    case UprobeLinkKind::session:
      return "session uprobes (one link per library, entry and return in one program)";
    case UprobeLinkKind::multi:
      return "multi-uprobe links (one per library and program)";
    case UprobeLinkKind::perf_event:
      break;
  }
  return "perf-event uprobes (one link per probe)";
}

namespace {

// Whether this kernel makes multi links of `attach_type` (see detect_uprobe_link_kind).
bool kernel_makes(uint32_t attach_type) {
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = static_cast<bpf_attach_type>(attach_type));
  const UniqueFd prog(bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", insns, 2, &opts));
  if (!prog) return false;
  const char* path = "/";
  unsigned long offset = 0;
  LinkCreateUprobeMulti a{};
  a.prog_fd = static_cast<uint32_t>(prog.get());
  a.attach_type = attach_type;
  a.path = reinterpret_cast<uintptr_t>(path);
  a.offsets = reinterpret_cast<uintptr_t>(&offset);
  a.cnt = 1;
  const UniqueFd link(link_create(a));
  const int err = errno;
  return !link && err == EBADF;
}

}  // namespace

UprobeLinkKind detect_uprobe_link_kind() {
  const char* asked = std::getenv("CAUSEWAY_UPROBE_LINKS");
  const std::string want = asked ? asked : "";
  if (want == "perf") return UprobeLinkKind::perf_event;
  if (want != "multi" && kernel_makes(kAttachUprobeSession)) return UprobeLinkKind::session;
  return kernel_makes(kAttachUprobeMulti) ? UprobeLinkKind::multi : UprobeLinkKind::perf_event;
}

Result<int> attach_uprobe_multi(int prog_fd, const std::string& path, const std::vector<UprobeSite>& sites,
                                ProbeSide side, uint32_t pid) {
  static constexpr const char* kWhat[] = {"uprobe", "uretprobe", "session uprobe"};
  const char* what = kWhat[static_cast<int>(side)];
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
  a.attach_type = side == ProbeSide::session ? kAttachUprobeSession : kAttachUprobeMulti;
  a.path = reinterpret_cast<uintptr_t>(path.c_str());
  a.offsets = reinterpret_cast<uintptr_t>(offsets.data());
  a.cookies = reinterpret_cast<uintptr_t>(cookies.data());
  a.cnt = static_cast<uint32_t>(sites.size());
  a.multi_flags = side == ProbeSide::ret ? kUprobeMultiReturn : 0;
  a.pid = pid;
  const int fd = link_create(a);
  if (fd < 0)
    return make_error("attach", std::string(what) + " multi-link on " + path + " (" + std::to_string(sites.size()) +
                                    " sites): " + std::strerror(errno));
  return fd;
}

}  // namespace causeway::collector
