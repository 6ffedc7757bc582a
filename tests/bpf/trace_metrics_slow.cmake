# `trace --metrics` under a slowloris (issue 35 item 4): 300 idle + 2 dripping sockets, an
# honest scrape within 1 s, `--duration` on time. Root + BPF, else 77.
causeway_test(test_trace_metrics_slow LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_trace_metrics_slow.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
          ${PROJECT_SOURCE_DIR}/tests/support/slow_clients.cpp
  LIBS causeway_tracedb)
add_dependencies(test_trace_metrics_slow causeway causeway_testprogs)
