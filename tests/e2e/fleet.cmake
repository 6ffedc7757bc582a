# The ClickHouse fleet store (docs/FLEET.md) against a real, private clickhouse-server from
# Debian (installed by scripts/clickhouse_private.sh when missing; skipped (77) only when it
# cannot be): ship two hosts, explain/stats/requests --fleet, ship twice, the server killed
# mid-ship, an unconfirmed batch, bad credentials and a newer store.
causeway_test(test_fleet_clickhouse LABEL e2e TIMEOUT 900
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fleet_clickhouse.cpp ${CMAKE_CURRENT_LIST_DIR}/clickhouse_fixture.cpp ${CMAKE_CURRENT_LIST_DIR}/clickhouse_server.cpp
  LIBS causeway_fleet)
add_dependencies(test_fleet_clickhouse causeway)
# The mcp --fleet case (the official MCP SDK client over the store) runs as its own CTest
# entry (CAUSEWAY_FLEET_MCP_CASE=1), so that without tests/e2e/node_modules it reports
# Skipped (77) instead of hiding inside the other cases' pass.
add_test(NAME test_fleet_clickhouse_mcp COMMAND test_fleet_clickhouse "--test-case=mcp --fleet*")
get_test_property(test_fleet_clickhouse ENVIRONMENT fleet_env)
set_tests_properties(test_fleet_clickhouse_mcp PROPERTIES LABELS e2e SKIP_RETURN_CODE 77 TIMEOUT 900
  ENVIRONMENT "${fleet_env};CAUSEWAY_FLEET_MCP_CASE=1")
