# The reader of examples/clickhouse/users.xml, as written, on a real private clickhouse-server
# (scripts/clickhouse_private.sh; skipped (77) only when it cannot be installed): it reads the
# fleet database and nothing else, `mcp --fleet` run_sql refuses system.processes, and `mcp
# --fleet` refuses to start as a user that reaches more (docs/FLEET.md "What a reader can see").
causeway_test(test_fleet_reader_reach LABEL security TIMEOUT 600
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fleet_reader_reach.cpp ${CMAKE_CURRENT_LIST_DIR}/clickhouse_fixture.cpp
  LIBS causeway_fleet)
add_dependencies(test_fleet_reader_reach causeway)
