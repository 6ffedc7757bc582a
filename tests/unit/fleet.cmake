# The fleet store's pieces that need no server: TabSeparated escaping both ways, the Native blocks ship sends, statement
# quoting, endpoint checks, the shape check of every store answer and password files; the ClickHouse SQL guard of mcp --fleet's run_sql (the server tests are tests/e2e/fleet.cmake).
causeway_test(test_fleet_unit LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fleet_tsv.cpp ${CMAKE_CURRENT_LIST_DIR}/test_fleet_answer.cpp ${CMAKE_CURRENT_LIST_DIR}/test_fleet_native.cpp ${CMAKE_CURRENT_LIST_DIR}/test_clickhouse_guard.cpp
  LIBS causeway_fleet causeway_sqlguard)
