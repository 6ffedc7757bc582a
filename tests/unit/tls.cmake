# TLS plaintext (docs/INFERENCE.md "TLS"): the tracker's switch to plaintext records, the
# record flag's decoding, and where a process's libssl and its SSL functions are found.
causeway_test(test_requests_tls LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_tls.cpp
  LIBS causeway_collector_core OpenSSL::SSL)
