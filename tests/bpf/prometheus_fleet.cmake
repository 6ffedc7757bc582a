# Two tracers in their own UTS namespaces scraped by Debian's prometheus (installed by the
# test when missing); its HTTP API agrees with each host's `causeway stats`, and the
# examples/prometheus config and rules pass promtool. Root + BPF (and prometheus), else 77.
pkg_check_modules(PROM_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib>=0.11)
causeway_test(test_prometheus_fleet LABEL bpf TIMEOUT 600
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_prometheus_fleet.cpp ${CMAKE_CURRENT_LIST_DIR}/prometheus_server.cpp
          ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb PkgConfig::PROM_HTTPLIB)
add_dependencies(test_prometheus_fleet causeway causeway_testprogs)
