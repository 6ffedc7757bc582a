# Requests timed from the kernel's arrival of their bytes (docs/INFERENCE.md "Arrival time"): a
# plain-asyncio streaming server whose event loop is blocked in bursts, a client that times
# itself with kernel receive timestamps; TTFT from arrival, the API wait, api_server_busy.
causeway_test(test_requests_arrival_bpf LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_arrival_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tls_certificate.cpp
  LIBS causeway_tracedb)
add_dependencies(test_requests_arrival_bpf causeway)
