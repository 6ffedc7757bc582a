// What `causeway check` says about the TLS of each server on the host (docs/INFERENCE.md
// "TLS"): every process listening on TCP, and whether a trace would read its TLS plaintext
// (a mapped OpenSSL libssl), only count its TLS connections (OpenSSL linked into the
// executable: Node; Go's crypto/tls), or sees no TLS library in it at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collector/ssl_attach.h"

namespace causeway::collector {

struct TlsServer {
  uint32_t pid = 0;
  std::string comm;            // sanitized
  std::vector<uint16_t> ports;  // the ports it listens on
  TlsReadability tls;
};

// Every process listening on TCP but self, by pid.
std::vector<TlsServer> tls_servers_on_host(uint32_t self);

// One line per server with a TLS library ("pid 12 python3 :8443: TLS plaintext readable
// through …"), at most `limit`, then how many servers had none.
std::string tls_servers_text(const std::vector<TlsServer>& servers, size_t limit);

}  // namespace causeway::collector
