// BpfObject's TLS plaintext hook (bpf/ssl.bpf.h): kept apart from bpf_loader.cpp, whose
// socket hook it sits beside.
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "causeway.skel.h"
#include "collector/bpf_loader.h"
#include "collector/proc_maps.h"

namespace causeway::collector {

Result<TlsReadability> BpfObject::trace_server_tls(uint32_t pid) {
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  TlsReadability t = tls_readability(read_maps(pid), root);
  if (t.reach != TlsReach::libssl || ssl_links_.count(pid)) return t;
  const bool session = link_kind_ == UprobeLinkKind::session;
  if (!bpf_program__autoload(session ? skel_->progs.cw_ssl_session : skel_->progs.cw_ssl_enter))
    return make_error("attach", "TLS tracing needs the host tracepoints");
  // The file as the process sees it: a server in a container has its own.
  const std::string path = root + t.library;
  auto sites = libssl_sites(path);
  if (!sites) return sites.error();
  if (session) {
    // One link: the entry of every function, and the return where the entry asks for it.
    auto fd = attach_uprobe_multi(bpf_program__fd(skel_->progs.cw_ssl_session), path, sites->sites, ProbeSide::session, pid);
    if (!fd) return fd.error();
    ssl_links_[pid].multi.emplace_back(*fd);
    ++ssl_servers_;
    return t;
  }
  LibcLinks links;
  // Returns first, so no entry runs without its return (collector/attacher.cpp says why).
  for (bool retprobe : {true, false}) {
    for (const UprobeSite& site : sites->sites) {
      if (retprobe && site.cookie == kSslSetFdCookie) continue;
      LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = site.cookie, .retprobe = retprobe);
      bpf_program* prog = retprobe ? skel_->progs.cw_ssl_exit : skel_->progs.cw_ssl_enter;
      bpf_link* l = bpf_program__attach_uprobe_opts(prog, static_cast<pid_t>(pid), path.c_str(), site.offset, &opts);
      if (!l)
        return make_error("attach", std::string(retprobe ? "uretprobe" : "uprobe") + " on " + path + "+" +
                                        std::to_string(site.offset) + " for pid " + std::to_string(pid) + ": " +
                                        std::strerror(errno));
      links.perf.emplace_back(l);
    }
  }
  ssl_links_[pid] = std::move(links);
  ++ssl_servers_;
  return t;
}

std::vector<uint64_t> BpfObject::ssl_stats() const { return percpu_sums(skel_->maps.ssl_stats, CW_SSL_STAT__COUNT); }

size_t BpfObject::ssl_links() const {
  size_t n = 0;
  for (const auto& [pid, l] : ssl_links_) n += l.multi.size() + l.perf.size();
  return n;
}

}  // namespace causeway::collector
