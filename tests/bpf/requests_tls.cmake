# TLS plaintext through libssl uprobes (bpf/ssl.bpf.h, docs/INFERENCE.md "TLS"): a Python
# server on the system libssl, threaded (SSL_set_fd) and asyncio (memory BIOs), gives the same
# rows over HTTPS as over plain HTTP; Node's linked-in OpenSSL is counted, not read.
causeway_test(test_requests_tls_bpf LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_tls_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tls_certificate.cpp
  LIBS causeway_tracedb)
add_dependencies(test_requests_tls_bpf causeway causeway_testprogs)
