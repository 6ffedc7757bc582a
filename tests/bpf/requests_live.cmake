# HTTP requests from the kernel side (docs/INFERENCE.md): a real aiohttp streaming server with
# an engine-core child on the fake libcudart, a client that measures TTFT/ITL itself.
causeway_test(test_requests_live_bpf LABEL bpf TIMEOUT 600
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_live_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_diagnosis)
add_dependencies(test_requests_live_bpf causeway causeway_testprogs)

# Request tracing's hooks: the libc hook by default (breakpoints in the server's libc only, none
# in an untraced process's), a static server on the syscall tracepoints beside it, the forced
# syscalls and raw hooks with requests as exact.
causeway_test(test_requests_hook_bpf LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_hook_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb)
add_dependencies(test_requests_hook_bpf causeway causeway_testprogs)

# Real servers of several stacks (docs/INFERENCE.md "Tested stacks"), one test per runtime:
# peers from the kernel socket, causeway's own scrapes excluded (and counted exactly), --pid
# alone and --http-port alone both trace the server's scheduling, a CPU hog on the server's CPU
# named as the culprit, the `openai` npm SDK as a streaming client, errors / aborts /
# disconnects live (fastify, uvicorn), TLS through Node's bundled OpenSSL counted, and 3 x 5,000
# concurrent connections with no socket record lost (Python).
foreach(stack node python go_cpp)
  causeway_test(test_requests_${stack}_bpf LABEL bpf TIMEOUT 480
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_${stack}_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/requests_stacks_support.cpp
            ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
    LIBS causeway_tracedb)
  add_dependencies(test_requests_${stack}_bpf causeway causeway_testprogs)
endforeach()

# Two tracers of one server: neither stores the other's /metrics scrapes (the host's shared map
# of scrape connections, collector/tracer_conns.h).
causeway_test(test_requests_two_tracers_bpf LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_two_tracers_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/requests_stacks_support.cpp
          ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb)
add_dependencies(test_requests_two_tracers_bpf causeway causeway_testprogs)
