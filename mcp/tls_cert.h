// TLS material for the HTTPS transport: the user's certificate, or a self-signed ECDSA P-256
// certificate generated on first start (key file 0600) and reused afterwards, so clients can
// pin its SHA-256 fingerprint.
#pragma once

#include <string>

#include "common/result.h"

namespace causeway::mcp {

struct TlsMaterial {
  std::string cert_path;
  std::string key_path;
  std::string fingerprint;  // SHA-256 of the DER certificate, "AB:CD:…"
  bool generated = false;   // made now (false: given, or reused from an earlier start)
};

// cert+key given: checks they load. Neither given: uses (or creates) <state_dir>/mcp-cert.pem
// and mcp-key.pem, valid for localhost, 127.0.0.1 and ::1.
Result<TlsMaterial> ensure_tls_material(const std::string& cert, const std::string& key, const std::string& state_dir);

// Default state folder: $XDG_STATE_HOME/causeway, else $HOME/.local/state/causeway.
std::string default_state_dir();

Result<std::string> certificate_fingerprint(const std::string& cert_path);

}  // namespace causeway::mcp
