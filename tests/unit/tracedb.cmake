causeway_test(test_tracedb LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tracedb_schema.cpp ${CMAKE_CURRENT_LIST_DIR}/test_tracedb_writer.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_tracedb_histogram.cpp
  LIBS causeway_tracedb)
causeway_test(test_common LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_common_units.cpp ${CMAKE_CURRENT_LIST_DIR}/test_common_sanitize.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_common_untrusted_json.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_common_json_exact.cpp ${CMAKE_CURRENT_LIST_DIR}/test_common_argmax.cpp
  LIBS causeway_common)
causeway_test(test_stats LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_stats.cpp LIBS causeway_diagnosis causeway_synth)
causeway_test(test_cli_foundation LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cli_foundation.cpp LIBS causeway_tracedb nlohmann_json::nlohmann_json)
causeway_test(test_tracedb_merge LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tracedb_merge.cpp LIBS causeway_tracedb)
# Writer refusals and stale-read detection (also in the security tier).
causeway_test(test_tracedb_files LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tracedb_files.cpp LIBS causeway_tracedb)
set_tests_properties(test_tracedb_files PROPERTIES LABELS "unit;security")
causeway_test(test_event_columns LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_event_columns.cpp LIBS causeway_tracedb)
