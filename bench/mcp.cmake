# `ninja -C <build> bench_mcp`: 8 HTTPS clients × get_trace_stats on a 10M-event demo DB
# (see docs/bench-mcp.md). Not part of ctest.
find_program(CAUSEWAY_NODE NAMES node)
if(TARGET causeway_mcp AND CAUSEWAY_NODE)
  add_custom_target(bench_mcp
    COMMAND ${CAUSEWAY_NODE} ${CMAKE_CURRENT_LIST_DIR}/mcp_bench.mjs $<TARGET_FILE:causeway> --events 10000000 --clients 8 --seconds 20
    DEPENDS causeway USES_TERMINAL)
endif()
