// A throwaway self-signed certificate for the live TLS tests (tests/bpf/test_requests_tls_bpf.cpp,
// test_requests_arrival_bpf.cpp), made at test time with the openssl command.
#pragma once

#include "tests/bpf/collector_harness.h"

namespace causeway::test {

// cert.pem and key.pem in dir (CN 127.0.0.1, RSA 2048, one day); prints SKIPPED and exits 77
// without the openssl command.
void make_tls_certificate(const TempDir& dir);

}  // namespace causeway::test
