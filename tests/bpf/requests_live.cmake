# HTTP requests from the kernel side (docs/INFERENCE.md): a real aiohttp streaming server with
# an engine-core child on the fake libcudart, a client that measures TTFT/ITL itself.
causeway_test(test_requests_live_bpf LABEL bpf TIMEOUT 600
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_live_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_analysis)
add_dependencies(test_requests_live_bpf causeway causeway_testprogs)
