# `trace --ship URL` against a private clickhouse-server (tests/e2e/clickhouse_fixture.h): rounds
# while tracing and the last one at the end leave the store equal to the DB; a dead store
# neither stalls nor fails the trace, and `causeway ship` catches up. Root + BPF, else skipped
# (77), and skipped when clickhouse-server cannot be installed.
causeway_test(test_fleet_ship_live LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fleet_ship_live.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
          ${CMAKE_CURRENT_LIST_DIR}/../e2e/clickhouse_fixture.cpp
  LIBS causeway_tracedb causeway_fleet)
add_dependencies(test_fleet_ship_live causeway causeway_testprogs)
