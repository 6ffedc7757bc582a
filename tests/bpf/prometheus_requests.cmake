# The request families of /metrics scraped by Debian's prometheus from a live trace of the
# streaming test server with a planted CPU hog: histogram counts equal `causeway requests`,
# the hog's lost time rises on /metrics. Root + BPF, prometheus and python3-aiohttp, else 77.
if(NOT TARGET PkgConfig::PROM_HTTPLIB)
  pkg_check_modules(PROM_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib>=0.11)
endif()
causeway_test(test_prometheus_requests LABEL bpf TIMEOUT 600
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_prometheus_requests.cpp ${CMAKE_CURRENT_LIST_DIR}/prometheus_server.cpp
          ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb PkgConfig::PROM_HTTPLIB)
add_dependencies(test_prometheus_requests causeway causeway_testprogs)
