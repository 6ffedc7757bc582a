// Where the TLS plaintext of a server is read (bpf/ssl.bpf.h, docs/INFERENCE.md "TLS"): the
// OpenSSL 3 shared library it maps (libssl.so.3: CPython's ssl module, nginx, C++ servers
// linked to the system OpenSSL) and its SSL_read / SSL_write (_ex) functions, probed with the
// server's pid. TLS inside the executable (Node's bundled OpenSSL, Go's crypto/tls, rustls)
// is not probed: such connections are counted (http_tls_connections), not read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collector/proc_maps.h"
#include "collector/uprobe_multi.h"
#include "common/result.h"

namespace causeway::collector {

// The libssl a process maps (its path in the process's mount namespace), empty when none
// (a server without TLS, or one whose TLS is linked in).
std::string mapped_libssl(const std::vector<Mapping>& maps);

// bpf/ssl.bpf.h CW_SSL_SET_FD: SSL_set_fd's cookie, probed at its entry only (it binds an SSL
// object to its socket; its return says nothing more).
constexpr uint64_t kSslSetFdCookie = 5;

// The probe sites of one libssl: an entry per function found and a return for each but
// SSL_set_fd (cookie: bpf/ssl.bpf.h CW_SSL_*). An error when SSL_read or SSL_write is missing.
struct SslSites {
  std::vector<UprobeSite> sites;
  std::vector<std::string> functions;  // the names found, for messages
};
Result<SslSites> libssl_sites(const std::string& path);

// collector_stats names of bpf/sock.bpf.h enum cw_ssl_stat (http_tls_*), "" past the last.
const char* ssl_stat_name(uint32_t stat);

// What `check` and the trace say about one server's TLS: readable (a libssl with its
// functions), linked into the executable (counted, not read), or no TLS library at all.
enum class TlsReach { libssl, in_executable, none };
struct TlsReadability {
  TlsReach reach = TlsReach::none;
  std::string library;  // the libssl, or the executable
  std::string text;     // one line for the user
};
// maps: the process's; root: the prefix its paths are read under ("/proc/PID/root", "" for
// this mount namespace).
TlsReadability tls_readability(const std::vector<Mapping>& maps, const std::string& root);

}  // namespace causeway::collector
