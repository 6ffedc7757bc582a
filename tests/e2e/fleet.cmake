# The ClickHouse fleet store (docs/FLEET.md) against a real, private clickhouse-server from
# Debian (installed by scripts/clickhouse_private.sh when missing; skipped (77) only when it
# cannot be): ship two hosts, explain/stats/requests --fleet, ship twice, the server killed
# mid-ship, an unconfirmed batch, bad credentials and a newer store.
causeway_test(test_fleet_clickhouse LABEL e2e TIMEOUT 900
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fleet_clickhouse.cpp ${CMAKE_CURRENT_LIST_DIR}/clickhouse_fixture.cpp
  LIBS causeway_fleet)
add_dependencies(test_fleet_clickhouse causeway)
