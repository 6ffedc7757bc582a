# `causeway report --fleet` (docs/FLEET.md "The report over the fleet") against a real, private
# clickhouse-server from Debian (scripts/clickhouse_private.sh; skipped (77) only when it cannot
# be installed): two shipped hosts drawn as the read-only user, bad URL and password.
if(TARGET causeway_fleet AND TARGET causeway_exporters)
  causeway_test(test_fleet_report LABEL e2e TIMEOUT 900
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fleet_report.cpp ${CMAKE_CURRENT_LIST_DIR}/clickhouse_fixture.cpp ${CMAKE_CURRENT_LIST_DIR}/clickhouse_server.cpp
    LIBS causeway_fleet)
  add_dependencies(test_fleet_report causeway)
endif()
