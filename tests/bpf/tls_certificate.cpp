#include "tests/bpf/tls_certificate.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

namespace causeway::test {

void make_tls_certificate(const TempDir& dir) {
  if (run_process({"openssl", "version"}).exit_code != 0) {
    std::printf("SKIPPED: the openssl command is not installed (apt-get install openssl)\n");
    std::exit(77);
  }
  auto r = run_process({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-keyout", dir.file("key.pem"), "-out", dir.file("cert.pem")});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
}

}  // namespace causeway::test
