# `causeway trace --metrics`: a real Prometheus scrape of a live trace (root + BPF, else 77).
pkg_check_modules(TEST_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib>=0.11)
causeway_test(test_trace_metrics LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_trace_metrics.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb PkgConfig::TEST_HTTPLIB)
add_dependencies(test_trace_metrics causeway causeway_testprogs)
