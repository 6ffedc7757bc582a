# `trace --metrics`'s HTTP server under slow and hostile clients (docs/METRICS.md, docs/SECURITY.md).
if(TARGET causeway_metrics)
  causeway_test(test_metrics_server LABEL unit TIMEOUT 120
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_metrics_server.cpp ${PROJECT_SOURCE_DIR}/tests/support/slow_clients.cpp
    LIBS causeway_metrics)
endif()
