// TLS material for the HTTPS transport: the user's certificate, or one the server makes for
// itself. A self-signed leaf (CA:FALSE) is refused as a trust anchor by some clients (Claude
// Code on Node 20: "unable to verify the first certificate"), so the server makes a small local
// CA (CA:TRUE, pathlen 0, ECDSA P-256) on first start and signs with it a leaf for the listen
// address. Clients trust the CA (NODE_EXTRA_CA_CERTS=mcp-ca.pem); the leaf can be re-signed
// for another listen address without the clients changing anything. docs/MCP.md.
#pragma once

#include <string>

#include "common/result.h"

struct ssl_ctx_st;

namespace causeway::mcp {

struct TlsMaterial {
  std::string cert_path;
  std::string key_path;
  std::string cert_pem;     // the contents, read as the user they are for (common/user_input.h)
  std::string key_pem;
  std::string ca_path;      // the generated local CA clients should trust; "" for a given cert
  std::string fingerprint;  // SHA-256 of the DER leaf certificate, "AB:CD:…"
  bool generated = false;   // leaf made now (false: given, or reused from an earlier start)
};

// cert+key given: read as the sudo invoker (never as root for them), checked to load and match.
// Neither given: uses (or creates) in state_dir the CA
// (mcp-ca.pem, mcp-ca-key.pem) and a leaf it signed (mcp-cert.pem, mcp-key.pem), keys 0600.
// The leaf names localhost, 127.0.0.1, ::1 and listen_host (for a wildcard address: this
// host's name and interface addresses); a leaf that does not name listen_host is re-signed.
// The state folder is made, written and read as the user it belongs to (write_identity_for).
Result<TlsMaterial> ensure_tls_material(const std::string& cert, const std::string& key, const std::string& state_dir,
                                        const std::string& listen_host = "127.0.0.1");

// Default state folder: $XDG_STATE_HOME/causeway, else $HOME/.local/state/causeway.
std::string default_state_dir();

// SHA-256 of the first certificate of `cert_pem` (DER), "AB:CD:…".
Result<std::string> certificate_fingerprint(const std::string& cert_pem);

// Puts the material's certificate chain (the leaf first, then any intermediates of the same
// PEM text) and its private key into `ctx`, checked to match.
Result<void> use_tls_material(ssl_ctx_st* ctx, const TlsMaterial& m);

}  // namespace causeway::mcp
