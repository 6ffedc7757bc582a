#include "mcp/tls_cert.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

namespace causeway::mcp {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(FILE* p) const { fclose(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

Owned<X509> read_cert(const std::string& path) {
  Owned<FILE> f(fopen(path.c_str(), "re"));
  if (!f) return nullptr;
  return Owned<X509>(PEM_read_X509(f.get(), nullptr, nullptr, nullptr));
}

bool add_ext(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  Owned<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

Result<void> generate(const std::string& cert_path, const std::string& key_path) {
  Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
  if (!key) return make_error("tls", "Cannot generate an ECDSA P-256 key.");
  Owned<X509> cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  FILE* r = fopen("/dev/urandom", "re");
  if (!r || fread(serial, 1, sizeof serial, r) != sizeof serial) {
    if (r) fclose(r);
    return make_error("tls", "Cannot read /dev/urandom for the certificate serial.");
  }
  fclose(r);
  serial[0] &= 0x7F;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("causeway mcp (localhost)"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  if (!add_ext(cert.get(), NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1") ||
      !add_ext(cert.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !add_ext(cert.get(), NID_key_usage, "critical,digitalSignature") ||
      !add_ext(cert.get(), NID_ext_key_usage, "serverAuth"))
    return make_error("tls", "Cannot build the certificate extensions.");
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return make_error("tls", "Cannot self-sign the certificate.");

  // The key is created 0600 from the start (no window where it is world-readable).
  int kfd = ::open(key_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (kfd < 0) return make_error("tls", "Cannot create " + key_path + ".");
  fchmod(kfd, 0600);
  Owned<FILE> kf(fdopen(kfd, "w"));
  if (!kf || PEM_write_PrivateKey(kf.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return make_error("tls", "Cannot write " + key_path + ".");
  kf.reset();
  Owned<FILE> cf(fopen(cert_path.c_str(), "we"));
  if (!cf || PEM_write_X509(cf.get(), cert.get()) != 1) return make_error("tls", "Cannot write " + cert_path + ".");
  return {};
}

}  // namespace

std::string default_state_dir() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/causeway";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/state/causeway";
  return ".causeway-state";
}

Result<std::string> certificate_fingerprint(const std::string& cert_path) {
  auto cert = read_cert(cert_path);
  if (!cert) return make_error("tls", "Cannot read a PEM certificate from " + cert_path + ".");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  X509_digest(cert.get(), EVP_sha256(), md, &n);
  std::string out;
  char hex[4];
  for (unsigned int i = 0; i < n; ++i) {
    snprintf(hex, sizeof hex, i ? ":%02X" : "%02X", md[i]);
    out += hex;
  }
  return out;
}

Result<TlsMaterial> ensure_tls_material(const std::string& cert, const std::string& key, const std::string& state_dir) {
  TlsMaterial m;
  if (!cert.empty() || !key.empty()) {
    if (cert.empty() || key.empty()) return make_error("usage", "--tls-cert and --tls-key go together.");
    m.cert_path = cert;
    m.key_path = key;
  } else {
    std::string dir = state_dir.empty() ? default_state_dir() : state_dir;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return make_error("tls", "Cannot create " + dir + " for the generated certificate: " + ec.message());
    m.cert_path = dir + "/mcp-cert.pem";
    m.key_path = dir + "/mcp-key.pem";
    if (!std::filesystem::exists(m.cert_path) || !std::filesystem::exists(m.key_path)) {
      auto g = generate(m.cert_path, m.key_path);
      if (!g) return g.error();
      m.generated = true;
    } else {
      struct stat st {};
      if (stat(m.key_path.c_str(), &st) == 0 && (st.st_mode & 077))
        return make_error("tls", m.key_path + " is readable by other users; chmod 600 it (or delete both files to regenerate).");
    }
  }
  auto fp = certificate_fingerprint(m.cert_path);
  if (!fp) return fp.error();
  m.fingerprint = fp.value();
  return m;
}

}  // namespace causeway::mcp
