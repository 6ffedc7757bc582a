#include "mcp/tls_cert.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "common/fs_user.h"
#include "common/unique_fd.h"
#include "common/user_input.h"

namespace causeway::mcp {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(FILE* p) const { fclose(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(ifaddrs* p) const { freeifaddrs(p); }
  void operator()(BIO* p) const { BIO_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

constexpr long kDay = 24L * 3600;
constexpr long kCaDays = 10 * 365;
constexpr long kLeafDays = 365;
// A leaf this close to its end is re-signed at start, so a long-running setup never serves an
// expired one after a restart.
constexpr long kRenewDays = 30;

Owned<X509> read_cert(const std::string& path) {
  Owned<FILE> f(fopen(path.c_str(), "re"));
  if (!f) return nullptr;
  return Owned<X509>(PEM_read_X509(f.get(), nullptr, nullptr, nullptr));
}

Owned<BIO> pem_bio(const std::string& pem) { return Owned<BIO>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

Owned<EVP_PKEY> read_key(const std::string& path) {
  Owned<FILE> f(fopen(path.c_str(), "re"));
  if (!f) return nullptr;
  return Owned<EVP_PKEY>(PEM_read_PrivateKey(f.get(), nullptr, nullptr, nullptr));
}

bool add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Owned<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

bool wildcard(const std::string& host) { return host.empty() || host == "0.0.0.0" || host == "::"; }

bool is_ip(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// What the leaf must name: loopback always; the listen host; for a wildcard listener, this
// host's name and the addresses of its interfaces (link-local ones need a zone id in URLs,
// which certificates cannot carry).
std::vector<std::string> wanted_names(const std::string& listen_host) {
  std::vector<std::string> names = {"DNS:localhost", "IP:127.0.0.1", "IP:::1"};
  auto add = [&names](const std::string& host) {
    std::string n = (is_ip(host) ? "IP:" : "DNS:") + host;
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  if (!wildcard(listen_host)) {
    add(listen_host);
    return names;
  }
  char hostname[256] = {};
  if (gethostname(hostname, sizeof hostname - 1) == 0 && *hostname) add(hostname);
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0) return names;
  Owned<ifaddrs> list(raw);
  for (ifaddrs* a = raw; a; a = a->ifa_next) {
    if (!a->ifa_addr || !(a->ifa_flags & IFF_UP)) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(a->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    } else {
      continue;
    }
    add(text);
  }
  return names;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

// Whether the leaf names everything in `names` ("DNS:x" / "IP:y").
bool names_all(X509* leaf, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    bool ip = n.rfind("IP:", 0) == 0;
    std::string v = n.substr(ip ? 3 : 4);
    int ok = ip ? X509_check_ip_asc(leaf, v.c_str(), 0) : X509_check_host(leaf, v.c_str(), v.size(), 0, nullptr);
    if (ok != 1) return false;
  }
  return true;
}

Result<Owned<X509>> new_cert(EVP_PKEY* key, const std::string& cn, long days) {
  Owned<X509> cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return make_error("tls", "No randomness for the certificate serial.");
  serial[0] &= 0x7F;  // positive
  Owned<BIGNUM> bn(BN_bin2bn(serial, sizeof serial, nullptr));
  BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get()));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // clock skew between client and server
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * kDay);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("causeway"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

// Written beside, then renamed: a reader never sees half a file, and a key file is 0600 from
// its first byte.
Result<void> write_pem(const std::string& path, mode_t mode, const std::function<bool(FILE*)>& write) {
  std::string tmp = path + ".tmp";
  unlink(tmp.c_str());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return make_error("tls", "Cannot create " + tmp + ".");
  fchmod(fd.get(), mode);
  Owned<FILE> f(fdopen(fd.get(), "w"));
  if (!f) return make_error("tls", "Cannot write " + tmp + ".");
  fd.release();  // the FILE closes it now
  if (!write(f.get()) || fflush(f.get()) != 0) return make_error("tls", "Cannot write " + tmp + ".");
  f.reset();
  if (rename(tmp.c_str(), path.c_str()) != 0) return make_error("tls", "Cannot rename " + tmp + " to " + path + ".");
  return {};
}

Result<void> write_key(const std::string& path, EVP_PKEY* key) {
  return write_pem(path, 0600, [key](FILE* f) { return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1; });
}

Result<void> write_cert(const std::string& path, X509* cert) {
  return write_pem(path, 0644, [cert](FILE* f) { return PEM_write_X509(f, cert) == 1; });
}

struct Ca {
  Owned<X509> cert;
  Owned<EVP_PKEY> key;
};

Result<Ca> make_ca(const std::string& cert_path, const std::string& key_path) {
  Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
  if (!key) return make_error("tls", "Cannot generate an ECDSA P-256 key.");
  char hostname[256] = {};
  gethostname(hostname, sizeof hostname - 1);
  auto cert = new_cert(key.get(), std::string("causeway mcp local CA (") + hostname + ")", kCaDays);
  if (!cert) return cert.error();
  X509* c = cert->get();
  X509_set_issuer_name(c, X509_get_subject_name(c));
  // pathlen 0: the CA signs leaves only, never another CA.
  if (!add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") || !add_ext(c, c, NID_subject_key_identifier, "hash"))
    return make_error("tls", "Cannot build the CA certificate extensions.");
  if (X509_sign(c, key.get(), EVP_sha256()) == 0) return make_error("tls", "Cannot self-sign the CA certificate.");
  if (auto w = write_key(key_path, key.get()); !w) return w.error();
  if (auto w = write_cert(cert_path, c); !w) return w.error();
  return Ca{std::move(cert.value()), std::move(key)};
}

Result<void> make_leaf(const Ca& ca, const std::vector<std::string>& names, const std::string& cert_path, const std::string& key_path) {
  Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
  if (!key) return make_error("tls", "Cannot generate an ECDSA P-256 key.");
  auto cert = new_cert(key.get(), "causeway mcp", kLeafDays);
  if (!cert) return cert.error();
  X509* c = cert->get();
  X509_set_issuer_name(c, X509_get_subject_name(ca.cert.get()));
  // What a TLS server certificate needs and nothing more (RFC 5280 §4.2.1; CA/B baseline):
  // not a CA, ECDSA signing only, server authentication, the names clients connect to.
  if (!add_ext(c, ca.cert.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !add_ext(c, ca.cert.get(), NID_key_usage, "critical,digitalSignature") ||
      !add_ext(c, ca.cert.get(), NID_ext_key_usage, "serverAuth") ||
      !add_ext(c, ca.cert.get(), NID_subject_alt_name, join(names)) ||
      !add_ext(c, ca.cert.get(), NID_subject_key_identifier, "hash") ||
      !add_ext(c, ca.cert.get(), NID_authority_key_identifier, "keyid:always"))
    return make_error("tls", "Cannot build the certificate extensions.");
  if (X509_sign(c, ca.key.get(), EVP_sha256()) == 0) return make_error("tls", "Cannot sign the certificate with the local CA.");
  if (auto w = write_key(key_path, key.get()); !w) return w.error();
  return write_cert(cert_path, c);
}

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

Result<void> private_key_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & 077))
    return make_error("tls", path + " is readable by other users; chmod 600 it (or delete it to regenerate).");
  return {};
}

// The CA (made now if missing), and a leaf signed by it that names `names` and has kRenewDays
// left; a leaf from an earlier layout (self-signed) or for another address is replaced.
Result<bool> ensure_generated(const std::string& dir, const std::vector<std::string>& names) {
  const std::string ca_cert = dir + "/mcp-ca.pem", ca_key = dir + "/mcp-ca-key.pem";
  const std::string leaf_cert = dir + "/mcp-cert.pem", leaf_key = dir + "/mcp-key.pem";
  Ca ca;
  if (exists(ca_cert) && exists(ca_key)) {
    if (auto k = private_key_file(ca_key); !k) return k.error();
    ca.cert = read_cert(ca_cert);
    ca.key = read_key(ca_key);
    if (!ca.cert || !ca.key || X509_check_private_key(ca.cert.get(), ca.key.get()) != 1)
      return make_error("tls", "Cannot use the local CA " + ca_cert + " with " + ca_key + " (delete both to make a new CA; clients must then trust the new " + ca_cert + ").");
  } else {
    auto made = make_ca(ca_cert, ca_key);
    if (!made) return made.error();
    ca = std::move(made.value());
  }
  if (exists(leaf_cert) && exists(leaf_key)) {
    if (auto k = private_key_file(leaf_key); !k) return k.error();
    auto leaf = read_cert(leaf_cert);
    auto key = read_key(leaf_key);
    time_t renew = time(nullptr) + kRenewDays * kDay;
    if (leaf && key && X509_check_private_key(leaf.get(), key.get()) == 1 && X509_check_issued(ca.cert.get(), leaf.get()) == X509_V_OK &&
        X509_check_ca(leaf.get()) == 0 && names_all(leaf.get(), names) && X509_cmp_time(X509_get0_notAfter(leaf.get()), &renew) > 0)
      return false;
  }
  if (auto l = make_leaf(ca, names, leaf_cert, leaf_key); !l) return l.error();
  return true;
}

}  // namespace

std::string default_state_dir() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/causeway";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/state/causeway";
  return ".causeway-state";
}

Result<std::string> certificate_fingerprint(const std::string& cert_pem) {
  auto bio = pem_bio(cert_pem);
  Owned<X509> cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) return make_error("tls", "Cannot read a PEM certificate.");
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

Result<TlsMaterial> ensure_tls_material(const std::string& cert, const std::string& key, const std::string& state_dir,
                                        const std::string& listen_host) {
  TlsMaterial m;
  if (!cert.empty() || !key.empty()) {
    if (cert.empty() || key.empty()) return make_error("usage", "--tls-cert and --tls-key go together.");
    m.cert_path = cert;
    m.key_path = key;
    auto c = read_user_input(cert, "--tls-cert");
    if (!c) return make_error("tls", c.error().message + ".");
    auto k = read_user_input(key, "--tls-key");
    if (!k) return make_error("tls", k.error().message + ".");
    m.cert_pem = std::move(*c);
    m.key_pem = std::move(*k);
  } else {
    std::string dir = state_dir.empty() ? default_state_dir() : state_dir;
    auto owner = write_identity_for(dir);
    if (!owner) return make_error("tls", "--state-dir " + owner.error().message + ".");
    {
      auto as_owner = AsFsUser::enter(*owner);
      if (!as_owner) return as_owner.error();
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) return make_error("tls", "Cannot create " + dir + " for the generated certificate: " + ec.message());
      auto made = ensure_generated(dir, wanted_names(listen_host));
      if (!made) return made.error();
      m.generated = made.value();
    }
    m.cert_path = dir + "/mcp-cert.pem";
    m.key_path = dir + "/mcp-key.pem";
    m.ca_path = dir + "/mcp-ca.pem";
    auto c = read_file_as(*owner, m.cert_path, "the certificate");
    if (!c) return make_error("tls", c.error().message + ".");
    auto k = read_file_as(*owner, m.key_path, "the private key");
    if (!k) return make_error("tls", k.error().message + ".");
    m.cert_pem = std::move(*c);
    m.key_pem = std::move(*k);
  }
  auto fp = certificate_fingerprint(m.cert_pem);
  if (!fp) return make_error("tls", "Cannot read a PEM certificate from " + m.cert_path + ".");
  m.fingerprint = fp.value();
  return m;
}

Result<void> use_tls_material(SSL_CTX* ctx, const TlsMaterial& m) {
  auto certs = pem_bio(m.cert_pem);
  Owned<X509> leaf(certs ? PEM_read_bio_X509_AUX(certs.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!leaf || SSL_CTX_use_certificate(ctx, leaf.get()) != 1)
    return make_error("tls", "TLS setup failed: cannot load the certificate " + m.cert_path + ".");
  // The intermediates that follow the leaf in the same file; the read that ends the loop
  // leaves a "no start line" error on the queue.
  while (X509* extra = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr))
    if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
      X509_free(extra);
      return make_error("tls", "TLS setup failed: cannot use the chain of " + m.cert_path + ".");
    }
  ERR_clear_error();
  auto keys = pem_bio(m.key_pem);
  Owned<EVP_PKEY> key(keys ? PEM_read_bio_PrivateKey(keys.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key || SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1)
    return make_error("tls", "TLS setup failed: cannot load the private key " + m.key_path +
                                 " (or it does not match the certificate).");
  return {};
}

}  // namespace causeway::mcp
