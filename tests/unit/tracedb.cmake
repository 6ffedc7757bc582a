causeway_test(test_tracedb LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tracedb_schema.cpp ${CMAKE_CURRENT_LIST_DIR}/test_tracedb_writer.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_tracedb_histogram.cpp
  LIBS causeway_tracedb)
causeway_test(test_common LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_common_units.cpp ${CMAKE_CURRENT_LIST_DIR}/test_common_sanitize.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_common_json_exact.cpp
  LIBS causeway_common)
causeway_test(test_stats LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_stats.cpp LIBS causeway_analysis causeway_synth)
causeway_test(test_cli_foundation LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cli_foundation.cpp LIBS causeway_tracedb nlohmann_json::nlohmann_json)
causeway_test(test_tracedb_merge LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tracedb_merge.cpp LIBS causeway_tracedb)
