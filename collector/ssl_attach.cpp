#include "collector/ssl_attach.h"

#include <iterator>
#include <set>

#include "collector/elf_file.h"

namespace causeway::collector {

namespace {

// bpf/ssl.bpf.h CW_SSL_*. CPython 3.10+ calls the _ex forms, older code and nginx the plain
// ones; in OpenSSL 3 neither calls the other, so a call is seen once.
struct SslFunction {
  const char* name;
  uint64_t cookie;
};
constexpr SslFunction kSslFunctions[] = {
    {"SSL_read", 1}, {"SSL_write", 2}, {"SSL_read_ex", 3}, {"SSL_write_ex", 4}, {"SSL_set_fd", kSslSetFdCookie}};

bool is_libssl_name(std::string_view name) { return name.starts_with("libssl.so"); }

}  // namespace

const char* ssl_stat_name(uint32_t stat) {
  // bpf/sock.bpf.h enum cw_ssl_stat, in order.
  constexpr const char* kNames[] = {"http_tls_plaintext_calls", "http_tls_no_connection", "http_tls_untraced",
                                    "http_tls_calls_lost",      "http_tls_rebound",       "http_tls_cipher_skipped",
                                    "http_tls_arrival_reads"};
  return stat < std::size(kNames) ? kNames[stat] : "";
}

std::string mapped_libssl(const std::vector<Mapping>& maps) {
  for (const Mapping& m : maps) {
    // A libssl deleted under the process (upgraded in place) has no path left to probe.
    if (!m.exec || m.path.empty() || m.path[0] != '/' || m.path.ends_with(" (deleted)")) continue;
    if (is_libssl_name(base_name(m.path))) return m.path;
  }
  return {};
}

Result<SslSites> libssl_sites(const std::string& path) {
  auto elf = ElfFile::load(path);
  if (!elf) return elf.error();
  SslSites out;
  std::set<uint64_t> seen;
  for (const SslFunction& f : kSslFunctions) {
    auto sym = (*elf)->find(f.name);
    if (!sym) continue;
    auto off = (*elf)->vaddr_to_offset(sym->vaddr);
    if (!off || !seen.insert(*off).second) continue;
    out.sites.push_back(UprobeSite{*off, f.cookie});
    out.functions.emplace_back(f.name);
  }
  const auto has = [&](const char* n) {
    for (const auto& f : out.functions)
      if (f == n) return true;
    return false;
  };
  if (!has("SSL_read") || !has("SSL_write"))
    return make_error("libssl", path + " has no SSL_read/SSL_write: not an OpenSSL libssl");
  return out;
}

TlsReadability tls_readability(const std::vector<Mapping>& maps, const std::string& root) {
  TlsReadability t;
  if (std::string lib = mapped_libssl(maps); !lib.empty()) {
    t.library = lib;
    auto sites = libssl_sites(root + lib);
    if (sites) {
      t.reach = TlsReach::libssl;
      std::string fns;
      for (const auto& f : sites->functions) fns += (fns.empty() ? "" : ", ") + f;
      t.text = "TLS plaintext readable through " + lib + " (" + fns + ")";
      return t;
    }
    t.text = "maps " + lib + " but it cannot be probed: " + sites.error().message;
    return t;
  }
  // The executable: the first file mapping (the kernel maps it first).
  for (const Mapping& m : maps) {
    if (m.path.empty() || m.path[0] != '/') continue;
    auto elf = ElfFile::load(root + m.path);
    if (elf && (*elf)->find("SSL_read")) {  // Node, or a static OpenSSL
      t.reach = TlsReach::in_executable;
      t.library = m.path;
      t.text = "TLS linked into " + m.path + " (not a shared libssl): its connections are counted, not read";
      return t;
    }
    if (elf && (*elf)->find("crypto/tls.(*Conn).Read")) {  // Go's own TLS (a binary with its symbols)
      t.reach = TlsReach::in_executable;
      t.library = m.path;
      t.text = "Go crypto/tls in " + m.path + ": its connections are counted, not read";
      return t;
    }
    break;
  }
  t.text = "no libssl mapped: TLS connections (Go crypto/tls, rustls, or a libssl loaded later) are counted, not read";
  return t;
}

}  // namespace causeway::collector
