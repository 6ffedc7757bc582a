# A hostile fleet store (docs/SECURITY.md "A hostile fleet store"): ship, the --fleet readers,
# mcp --fleet and trace --ship against a fake ClickHouse (tests/e2e/fleet_hostile_store.py)
# answering a 2 GB body, a byte at a time, or garbage. Needs python3; the trace case root.
causeway_test(test_fleet_hostile LABEL security TIMEOUT 600
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fleet_hostile.cpp)
add_dependencies(test_fleet_hostile causeway)
